import { createHash, randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { createSequelize } from "../../src/platform/db.js";
import { migrate } from "../../src/platform/migrator.js";
import { migrations } from "../../src/migrations/index.js";

/** Tests need real servers; without them they fail here, loudly, instead of skipping. */
export function requireEnv(name: "TEST_DATABASE_URL" | "TEST_REDIS_URL"): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the tests with npm test, which starts PostgreSQL and Redis`);
  return v;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/** Named after the migrations' source, so a changed migration gets a fresh template. */
function templateName(): string {
  const dir = join(import.meta.dirname, "../../src/migrations");
  const h = createHash("sha256");
  for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(join(dir, f)));
  return `tpl_${h.digest("hex").slice(0, 16)}`;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: requireEnv("TEST_DATABASE_URL") });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/**
 * A database of its own for one test file, cloned from a migrated template (created once, under an
 * advisory lock, since test files run in parallel processes).
 */
export async function createTestDatabase(): Promise<string> {
  const base = requireEnv("TEST_DATABASE_URL");
  const template = templateName();
  await admin(async (c) => {
    await c.query("SELECT pg_advisory_lock(727002)");
    try {
      const { rowCount } = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [template]);
      if (!rowCount) {
        await c.query(`CREATE DATABASE ${template}_wip`);
        const db = createSequelize(withDatabase(base, `${template}_wip`), { poolMax: 2 });
        await migrate(db, migrations);
        await db.close();
        await c.query(`ALTER DATABASE ${template}_wip RENAME TO ${template}`);
      }
    } finally {
      await c.query("SELECT pg_advisory_unlock(727002)");
    }
  });
  const name = `test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  return withDatabase(base, name);
}

/** A database of its own with no migration applied, for tests of the migrations themselves. */
export async function createEmptyTestDatabase(): Promise<string> {
  const name = `test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  return withDatabase(requireEnv("TEST_DATABASE_URL"), name);
}

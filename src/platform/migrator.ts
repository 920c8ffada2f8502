import { Umzug, SequelizeStorage, type MigrationParams } from "umzug";
import type { Sequelize } from "sequelize";

export type MigrationFn = (params: MigrationParams<Sequelize>) => Promise<void>;
export interface Migration {
  name: string;
  up: MigrationFn;
}

/** Arbitrary constant: serializes migrations when several processes start at once. */
const MIGRATION_LOCK_ID = 727_001;

/** Applies pending migrations under an advisory lock, so concurrent starts apply each exactly once. */
export async function migrate(db: Sequelize, migrations: Migration[]): Promise<string[]> {
  const umzug = new Umzug<Sequelize>({
    migrations,
    context: db,
    storage: new SequelizeStorage({ sequelize: db, tableName: "schema_migrations" }),
    logger: undefined,
  });
  // A session-level lock needs one connection for the whole run: take it inside a transaction.
  return db.transaction(async (t) => {
    await db.query("SELECT pg_advisory_xact_lock($1)", { bind: [MIGRATION_LOCK_ID], transaction: t });
    const applied = await umzug.up();
    return applied.map((m) => m.name);
  });
}

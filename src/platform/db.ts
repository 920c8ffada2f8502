import { Sequelize, QueryTypes, type Transaction } from "sequelize";

export type { Transaction };

export interface DbOptions {
  poolMax?: number;
}

/** One pool per process; stores receive it from main.ts and pass transactions explicitly. */
export function createSequelize(url: string, options: DbOptions = {}): Sequelize {
  return new Sequelize(url, {
    dialect: "postgres",
    logging: false,
    pool: { max: options.poolMax ?? 10, min: 0, idle: 10_000, acquire: 10_000 },
  });
}

/** Bound-parameter SELECT returning plain rows. */
export async function selectRows<T>(
  db: Sequelize,
  sql: string,
  bind: unknown[],
  transaction?: Transaction,
): Promise<T[]> {
  return (await db.query(sql, { bind, type: QueryTypes.SELECT, transaction })) as T[];
}

/** Bound-parameter statement with RETURNING; yields the returned rows. */
export async function execReturning<T>(
  db: Sequelize,
  sql: string,
  bind: unknown[],
  transaction?: Transaction,
): Promise<T[]> {
  const [rows] = await db.query(sql, { bind, transaction });
  return rows as T[];
}

interface PooledClient {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}
interface PoolAccess {
  getConnection(options: { type: "read" | "write" }): Promise<PooledClient>;
  releaseConnection(connection: PooledClient): Promise<void> | void;
}

/**
 * A hot-path statement as a named prepared statement on a connection of sequelize's pool:
 * Postgres parses and plans it once per connection instead of once per call, and sequelize's
 * per-query bind formatting is skipped. `name` must identify `text` exactly. Outside transactions.
 */
export async function preparedRows<T>(db: Sequelize, name: string, text: string, values: unknown[]): Promise<T[]> {
  const pool = db.connectionManager as unknown as PoolAccess;
  const connection = await pool.getConnection({ type: "write" });
  try {
    return (await connection.query({ name, text, values })).rows as T[];
  } finally {
    await pool.releaseConnection(connection);
  }
}

/** Postgres error code of a failed query (23505 unique_violation, ...), through sequelize's wrapper. */
export function pgErrorCode(err: unknown): string | undefined {
  const e = err as { original?: { code?: string }; parent?: { code?: string }; code?: string };
  return e?.original?.code ?? e?.parent?.code ?? e?.code;
}

export function isUniqueViolation(err: unknown): boolean {
  return pgErrorCode(err) === "23505";
}

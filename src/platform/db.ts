import type { CursorPageRequest } from "./pagination.js";
import { setTimeout as sleep } from "node:timers/promises";
import { Sequelize, QueryTypes, type Transaction } from "sequelize";
import { AppError } from "./errors.js";

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

/** An ILIKE pattern matching `text` anywhere, its own `%`, `_` and `\\` standing for themselves. */
export function containsPattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
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

/** What sequelize's connection pool holds right now (sequelize-pool's counters). */
export interface DbPoolState {
  /** Connections open, in use or idle. */
  size: number;
  available: number;
  using: number;
  /** Callers waiting for a connection. */
  waiting: number;
  maxSize: number;
}

/** The pool's state for metrics; null once the pool is gone (after close) or when replication splits it. */
export function dbPoolState(db: Sequelize): DbPoolState | null {
  const pool = (db.connectionManager as unknown as { pool?: Partial<DbPoolState> }).pool;
  return pool && typeof pool.size === "number" ? (pool as DbPoolState) : null;
}

/** Postgres error code of a failed query (23505 unique_violation, ...), through sequelize's wrapper. */
export function pgErrorCode(err: unknown): string | undefined {
  const e = err as { original?: { code?: string }; parent?: { code?: string }; code?: string };
  return e?.original?.code ?? e?.parent?.code ?? e?.code;
}

export function isUniqueViolation(err: unknown): boolean {
  return pgErrorCode(err) === "23505";
}

/**
 * 40001 serialization_failure and 40P01 deadlock_detected: PostgreSQL aborted the transaction for
 * losing a race, not for anything wrong with the request, so running it again may well succeed.
 */
export function isTransientConflict(err: unknown): boolean {
  const code = pgErrorCode(err);
  return code === "40001" || code === "40P01";
}

/** What the caller sees when a transient conflict outlasts the retries: 503 with Retry-After, never 500. */
export function transientConflictError(cause: unknown): AppError {
  return new AppError({
    code: "UNAVAILABLE",
    reason: "TRANSACTION_CONFLICT",
    message: "The change collided with concurrent changes and was not applied; retry shortly",
    details: { retryAfterSeconds: 1 },
    cause,
  });
}

/**
 * PostgreSQL's refusals of a value itself (SQLSTATE class 22, and 54000 for an index entry too big):
 * what the request screen should have caught. What each one means, for the caller's message.
 */
const UNSTORABLE: Record<string, string> = {
  "22P02": "a value is not valid for its type",
  "22P05": "a text value holds a character the database cannot store",
  "22021": "a text value holds a character the database cannot store",
  "22001": "a text value is too long",
  "22003": "a number is out of range",
  "22007": "a date or time is not valid",
  "22008": "a date or time is out of range",
  "54000": "a value is too large to index",
};

export function isUnstorableValue(err: unknown): boolean {
  const code = pgErrorCode(err);
  return code !== undefined && Object.hasOwn(UNSTORABLE, code);
}

/** The last line of defence behind the request screen: a 400 saying what kind of value, never which. */
export function unstorableValueError(cause: unknown): AppError {
  return new AppError({
    code: "INVALID_ARGUMENT",
    reason: "UNSTORABLE_VALUE",
    message: `The request holds a value that cannot be stored: ${UNSTORABLE[pgErrorCode(cause)!]}`,
    cause,
  });
}

export interface RetryOptions {
  /** Runs in all, the first included. */
  attempts?: number;
  /** Hears of each retried failure (tests count them). */
  onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * A managed transaction that is run again, after a short random pause, when PostgreSQL aborts it
 * for a deadlock or a serialization failure; a conflict that persists becomes
 * {@link transientConflictError}. `fn` may run more than once, so it must do nothing but database
 * work on `t` (announce changes after the commit, not inside).
 */
export async function retryingTransaction<T>(db: Sequelize, fn: (t: Transaction) => Promise<T>, options: RetryOptions = {}): Promise<T> {
  const attempts = options.attempts ?? 3;
  for (let attempt = 1; ; attempt++) {
    try {
      return await db.transaction(fn);
    } catch (err) {
      if (!isTransientConflict(err)) throw err;
      if (attempt >= attempts) throw transientConflictError(err);
      options.onRetry?.(err, attempt);
      await sleep(Math.round(attempt * 20 * (0.5 + Math.random())));
    }
  }
}

/**
 * A keyset page of a tenant's rows, newest id first, optionally of one status, with one extra row
 * telling whether more exist (cursorPage). `where` adds a fixed condition such as a soft-delete filter;
 * the table name and `where` are code, never input.
 */
export function selectStatusPage<T>(
  db: Sequelize,
  table: string,
  tenantId: string,
  page: CursorPageRequest,
  status: string | null,
  where = "",
): Promise<T[]> {
  const bind: unknown[] = [tenantId, page.limit + 1];
  let condition = `tenant_id = $1${where ? ` AND ${where}` : ""}`;
  if (page.cursor) {
    bind.push(page.cursor);
    condition += ` AND id < $${bind.length}`;
  }
  if (status) {
    bind.push(status);
    condition += ` AND status = $${bind.length}`;
  }
  return selectRows<T>(db, `SELECT * FROM ${table} WHERE ${condition} ORDER BY id DESC LIMIT $2`, bind);
}

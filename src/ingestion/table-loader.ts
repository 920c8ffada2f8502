import { once } from "node:events";
import type { Writable } from "node:stream";
import type { Sequelize } from "sequelize";
import { from as copyFrom } from "pg-copy-streams";
import { columnType, quoteIdent, type LoadMode, type SchemaField } from "../core/index.js";
import { qualifiedTable, tableConstraints, tenantDataSchema } from "./schema-store.js";

/** The slice of a pg client the loader uses (sequelize's pooled connections are pg clients). */
interface PgClient {
  /** The server process of the connection: what pg_cancel_backend names. */
  readonly processID: number | null;
  query(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>>; rowCount: number | null }>;
  query<T extends Writable>(stream: T): T;
}
interface PoolAccess {
  getConnection(options: { type: "read" | "write" }): Promise<PgClient>;
  releaseConnection(connection: PgClient): Promise<void> | void;
}

/** What one target loads into. */
export interface LoadTarget {
  tenantId: string;
  pipelineId: string;
  nodeId: string;
  table: string;
  fields: readonly SchemaField[];
  loadMode: LoadMode;
  /** Rows with equal keys collapse to the last one read (upsertKey, else the table's primary key). */
  keys: string[];
  watermarkColumn: string | null;
  /** The pipeline's stored high-water mark for this node. */
  watermark: string | null;
}

export interface LoadResult {
  rowsLoaded: number;
  meta: Record<string, unknown>;
}

/** A load the runner refuses on purpose (an unknown cdc operation, ...): not worth retrying. */
export class LoadRefused extends Error {}

const CHUNK_CHARS = 64 * 1024;
const SORT_MEMORY = "64MB";
const CDC_DELETE = new Set(["delete", "d"]);
const CDC_UPSERT = new Set(["insert", "update", "upsert", "i", "u"]);

/** Whether a cdc operation value is known; unknown ones fail the run closed. */
export function cdcOperation(value: unknown): "delete" | "upsert" | null {
  const op = typeof value === "string" ? value.trim().toLowerCase() : "";
  return CDC_DELETE.has(op) ? "delete" : CDC_UPSERT.has(op) ? "upsert" : null;
}

/** One COPY text-format field: backslash escapes, `\N` for null. */
export function copyField(value: string | null): string {
  if (value === null) return "\\N";
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => (c === "\\" ? "\\\\" : c === "\t" ? "\\t" : c === "\n" ? "\\n" : "\\r")) : value;
}

/**
 * Streams one target's rows into a staging table with COPY FROM STDIN, then applies its load mode
 * with set-based statements, all in one transaction on one pooled connection: nothing is visible
 * until commit, and a failure at any point (a refused row, a bad operation, a lost connection)
 * rolls everything back. Staging rows carry their line (`__line`), so duplicates keep the last one.
 *
 * `signal` (a stop of the run) cancels the end of the COPY or the load statement under way and
 * refuses the next one, so a stop does not wait for a large load to apply; the caller then aborts
 * (rolls back). A COMMIT the server has already carried out stays.
 */
export class TableLoader {
  private client: PgClient | null = null;
  private copy: Writable | null = null;
  private staged = 0;
  /** Lines not yet written: COPY gets ~64 KB chunks, not a socket write per row. */
  private pending = "";
  /** A statement of endCopy or apply is running on the connection: what a stop cancels. */
  private busy = false;
  private cancelling: Promise<unknown> | null = null;

  constructor(
    private readonly db: Sequelize,
    private readonly target: LoadTarget,
    private readonly signal?: AbortSignal,
  ) {}

  private readonly cancel = () => {
    const pid = this.client?.processID;
    // Only while a statement of ours runs: between statements the connection is idle (a cancel would
    // be ignored), and released it may run someone else's. release() waits for this before giving it back.
    if (!this.busy || !pid) return;
    this.cancelling = this.db.query("SELECT pg_cancel_backend($1)", { bind: [pid] }).catch(() => undefined);
  };

  /** One statement of the load, unless the run was stopped; cancelled if it is stopped meanwhile. */
  private async exec(text: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>>; rowCount: number | null }> {
    if (this.signal?.aborted) throw this.signal.reason;
    this.busy = true;
    try {
      return await this.client!.query(text, values);
    } finally {
      this.busy = false;
    }
  }

  private get pool(): PoolAccess {
    return this.db.connectionManager as unknown as PoolAccess;
  }

  async begin(): Promise<void> {
    this.client = await this.pool.getConnection({ type: "write" });
    await this.client.query("BEGIN");
    // Deduplication sorts the whole staging table: in memory rather than in temporary files.
    await this.client.query(`SET LOCAL work_mem = '${SORT_MEMORY}'`);
    const cols = this.target.fields.map((f) => `${quoteIdent(f.name)} ${columnType(f)}`);
    await this.client.query(`CREATE TEMP TABLE ingest_stage (${[...cols, "__line bigint NOT NULL", "__op text"].join(", ")}) ON COMMIT DROP`);
    const list = [...this.target.fields.map((f) => quoteIdent(f.name)), "__line", "__op"].join(", ");
    this.copy = this.client.query(copyFrom(`COPY ingest_stage (${list}) FROM STDIN`));
    this.copy.on("error", () => {
      /* reported by the write or the end that meets it */
    });
    this.signal?.addEventListener("abort", this.cancel, { once: true });
  }

  /**
   * One staged row: its field values (checked; the array is the loader's from here on, its entries
   * become their COPY text), its line and its cdc operation. Resolves when the stream takes more.
   */
  write(values: Array<string | null>, line: number, op: string | null): Promise<void> | undefined {
    this.staged++;
    // In place and one join: no second array and no string per field beyond its COPY text.
    for (let i = 0; i < values.length; i++) values[i] = copyField(values[i]);
    this.pending += `${values.join("\t")}\t${line}\t${copyField(op)}\n`;
    if (this.pending.length < CHUNK_CHARS) return undefined;
    const ok = this.copy!.write(this.pending);
    this.pending = "";
    return ok ? undefined : (once(this.copy!, "drain") as Promise<unknown> as Promise<void>);
  }

  get stagedRows(): number {
    return this.staged;
  }

  /** Ends the COPY; the staging table then holds every row. */
  async endCopy(): Promise<void> {
    const copy = this.copy!;
    this.copy = null;
    const rest = this.pending;
    this.pending = "";
    if (this.signal?.aborted) throw this.signal.reason;
    this.busy = true;
    try {
      await new Promise<void>((resolve, reject) => {
        copy.once("finish", resolve);
        copy.once("error", reject);
        copy.end(rest || undefined);
      });
    } finally {
      this.busy = false;
    }
  }

  /** Applies the load mode and commits. */
  async apply(): Promise<LoadResult> {
    const c = { query: (text: string, values?: unknown[]) => this.exec(text, values) };
    const t = this.target;
    const started = performance.now();
    const table = qualifiedTable(t.tenantId, t.table);
    const cols = t.fields.map((f) => quoteIdent(f.name));
    const list = cols.join(", ");
    const keys = t.keys.map(quoteIdent);
    const dedup = (where = "", extra = "") =>
      keys.length
        ? `SELECT DISTINCT ON (${keys.join(", ")}) ${list}${extra} FROM ingest_stage ${where} ORDER BY ${keys.join(", ")}, __line DESC`
        : `SELECT ${list}${extra} FROM ingest_stage ${where}`;
    let meta: Record<string, unknown> = {};
    let rowsLoaded = 0;
    switch (t.loadMode) {
      case "upsert": {
        await c.query(`LOCK TABLE ${table} IN SHARE ROW EXCLUSIVE MODE`);
        const r = await this.upsert(table, dedup());
        rowsLoaded = r.inserted + r.updated;
        meta = r;
        break;
      }
      case "truncate": {
        await c.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
        await c.query(`TRUNCATE ${table}`);
        rowsLoaded = (await c.query(`INSERT INTO ${table} (${list}) ${dedup()}`)).rowCount ?? 0;
        break;
      }
      case "blue_green": {
        // The new table is loaded while readers keep reading the old one; only the renames wait for them.
        const suffix = Math.random().toString(36).slice(2, 10);
        const fresh = `${t.table}__bg_${suffix}`;
        const old = `${t.table}__old_${suffix}`;
        const schema = quoteIdent(tenantDataSchema(t.tenantId));
        const next = `${schema}.${quoteIdent(fresh)}`;
        await c.query(`CREATE TABLE ${next} (LIKE ${table} INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING GENERATED)`);
        rowsLoaded = (await c.query(`INSERT INTO ${next} (${list}) ${dedup()}`)).rowCount ?? 0;
        // Keys and unique indexes built once over the loaded rows; a duplicate fails the load here.
        await c.query(`ALTER TABLE ${next} ${tableConstraints(t.fields).map((x) => `ADD ${x}`).join(", ")}`);
        await c.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
        await c.query(`ALTER TABLE ${table} RENAME TO ${quoteIdent(old)}`);
        await c.query(`ALTER TABLE ${next} RENAME TO ${quoteIdent(t.table)}`);
        await c.query(`DROP TABLE ${schema}.${quoteIdent(old)}`);
        meta = { swapped: true };
        break;
      }
      case "incremental_watermark": {
        await c.query(`LOCK TABLE ${table} IN SHARE ROW EXCLUSIVE MODE`);
        const w = quoteIdent(t.watermarkColumn!);
        const field = t.fields.find((f) => f.name === t.watermarkColumn)!;
        await c.query(`DELETE FROM ingest_stage WHERE ${w} IS NULL${t.watermark === null ? "" : ` OR ${w} <= $1::${columnType(field)}`}`, t.watermark === null ? [] : [t.watermark]);
        const [{ high }] = (await c.query(`SELECT max(${w})::text AS high FROM ingest_stage`)).rows as Array<{ high: string | null }>;
        if (keys.length) {
          const r = await this.upsert(table, dedup());
          rowsLoaded = r.inserted + r.updated;
          meta = r;
        } else rowsLoaded = (await c.query(`INSERT INTO ${table} (${list}) SELECT ${list} FROM ingest_stage`)).rowCount ?? 0;
        const watermark = high ?? t.watermark;
        if (high !== null) {
          // In the load's transaction: the mark moves exactly when the rows up to it commit.
          await c.query(
            "UPDATE ingestion_pipelines SET watermarks = watermarks || jsonb_build_object($3::text, $4::text) WHERE tenant_id = $1 AND id = $2",
            [t.tenantId, t.pipelineId, t.nodeId, high],
          );
        }
        meta = { ...meta, previousWatermark: t.watermark, watermark };
        break;
      }
      case "cdc_mirror": {
        await c.query(`LOCK TABLE ${table} IN SHARE ROW EXCLUSIVE MODE`);
        // The last operation per key wins; the runner refused unknown operations while staging.
        await c.query(`CREATE TEMP TABLE ingest_last ON COMMIT DROP AS ${dedup("", ", __op")}`);
        const match = keys.map((k) => `t.${k} = l.${k}`).join(" AND ");
        const deleted = (await c.query(`DELETE FROM ${table} t USING ingest_last l WHERE ${match} AND lower(l.__op) IN ('delete', 'd')`)).rowCount ?? 0;
        const r = await this.upsert(table, `SELECT ${list} FROM ingest_last WHERE lower(__op) NOT IN ('delete', 'd')`);
        rowsLoaded = r.inserted + r.updated + deleted;
        meta = { ...r, deleted };
        break;
      }
    }
    await c.query("COMMIT");
    await this.release();
    return { rowsLoaded, meta: { ...meta, staged: this.staged, applyMs: Math.round(performance.now() - started) } };
  }

  /** Updates rows whose keys exist and inserts the rest, from `source` (one row per key), in one statement. */
  private async upsert(table: string, source: string): Promise<{ inserted: number; updated: number }> {
    const t = this.target;
    const keys = t.keys.map(quoteIdent);
    const others = t.fields.filter((f) => !t.keys.includes(f.name)).map((f) => quoteIdent(f.name));
    const list = t.fields.map((f) => quoteIdent(f.name)).join(", ");
    const match = (a: string, b: string) => keys.map((k) => `${a}.${k} = ${b}.${k}`).join(" AND ");
    const update = others.length
      ? `u AS (UPDATE ${table} t SET ${others.map((o) => `${o} = d.${o}`).join(", ")} FROM d WHERE ${match("t", "d")} RETURNING 1),`
      : "u AS (SELECT 1 WHERE false),";
    // Both parts read the table as it was before the statement, so a key is either updated or inserted.
    const { rows } = await this.exec(
      `WITH d AS (${source}), ${update}
       i AS (INSERT INTO ${table} (${list}) SELECT ${list} FROM d WHERE NOT EXISTS (SELECT 1 FROM ${table} x WHERE ${match("x", "d")}) RETURNING 1)
       SELECT (SELECT count(*) FROM u)::int AS updated, (SELECT count(*) FROM i)::int AS inserted`,
    );
    return { inserted: Number(rows[0].inserted), updated: Number(rows[0].updated) };
  }

  /** Rolls back whatever was staged or applied, and gives the connection back. */
  async abort(): Promise<void> {
    if (!this.client) return;
    this.pending = "";
    const copy = this.copy;
    this.copy = null;
    if (copy) {
      copy.destroy(new Error("load aborted"));
      await once(copy, "close").catch(() => undefined);
    }
    // A cancel still on its way would cancel the ROLLBACK.
    await this.cancelling;
    await this.client.query("ROLLBACK").catch(() => undefined);
    await this.release();
  }

  private async release(): Promise<void> {
    this.signal?.removeEventListener("abort", this.cancel);
    await this.cancelling;
    const client = this.client;
    this.client = null;
    if (client) await this.pool.releaseConnection(client);
  }
}

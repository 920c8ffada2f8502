import type { Sequelize } from "sequelize";
import { quoteIdent } from "../core/index.js";
import { qualifiedTable, tenantDataSchema } from "./schema-store.js";

const BATCH = 500;
const MAX_RECORD_CHARS = 10_000;

/**
 * A validate node's quarantine table (in the tenant's data schema): each refused row with its run,
 * node, file, line number and reason. Written in batches outside the load's transaction, so a
 * run that aborts keeps the rows that explain why.
 */
export class QuarantineWriter {
  private buffer: Array<{ node: string; file: string; line: number; reason: string; record: string }> = [];
  private written = 0;

  constructor(
    private readonly db: Sequelize,
    private readonly tenantId: string,
    readonly table: string,
    private readonly runId: string,
    private readonly pipelineId: string,
  ) {}

  async ensureTable(): Promise<void> {
    await this.db.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(tenantDataSchema(this.tenantId))}`);
    await this.db.query(
      `CREATE TABLE IF NOT EXISTS ${qualifiedTable(this.tenantId, this.table)} (
        run_id uuid NOT NULL, pipeline_id uuid NOT NULL, node_id text NOT NULL, file text NOT NULL,
        line_number bigint NOT NULL, reason text NOT NULL, record jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`,
    );
  }

  /** Buffers one row; resolves once a full batch is written. */
  add(node: string, file: string, line: number, reason: string, row: Record<string, unknown>): Promise<void> | undefined {
    let record = JSON.stringify(row);
    if (record.length > MAX_RECORD_CHARS) record = JSON.stringify({ truncated: record.slice(0, MAX_RECORD_CHARS) });
    this.buffer.push({ node, file, line, reason, record });
    return this.buffer.length >= BATCH ? this.flush() : undefined;
  }

  get count(): number {
    return this.written + this.buffer.length;
  }

  async flush(): Promise<void> {
    const rows = this.buffer;
    if (!rows.length) return;
    this.buffer = [];
    await this.db.query(
      `INSERT INTO ${qualifiedTable(this.tenantId, this.table)} (run_id, pipeline_id, node_id, file, line_number, reason, record)
       SELECT $1, $2, n, f, l, r, c::jsonb FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[]) AS q (n, f, l, r, c)`,
      { bind: [this.runId, this.pipelineId, rows.map((r) => r.node), rows.map((r) => r.file), rows.map((r) => r.line), rows.map((r) => r.reason), rows.map((r) => r.record)] },
    );
    this.written += rows.length;
  }
}

import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import type { NodeOutcome } from "./pipeline-runner.js";

export interface PipelineRow {
  tenant_id: string;
  id: string;
  name: string;
  description: string;
  connector_id: string | null;
  schema_id: string | null;
  ir_version: string;
  status: "draft" | "active";
  current_version: number;
  schedule: string | null;
  watermarks: Record<string, string>;
  created_at: Date;
  updated_at: Date;
}

/** A pipeline with the IR of its current version, as the public resource shows it; null before the first. */
export interface PipelineWithIr extends PipelineRow {
  current_ir: Record<string, unknown> | null;
}

export interface IrVersionRow {
  version: number;
  ir: Record<string, unknown>;
  comment: string;
  created_by: string | null;
  created_at: Date;
}

export interface RunRow {
  tenant_id: string;
  id: string;
  pipeline_id: string;
  ir_version: number;
  trigger: "manual" | "schedule";
  ok: boolean | null;
  node_results: NodeOutcome[];
  failed_node_id: string | null;
  error: string | null;
  attempts: number;
  dead_lettered: boolean;
  started_at: Date;
  finished_at: Date | null;
}

/** An unfinished run the sweep claimed: what finishing it as failed needs. */
export type ExpiredRun = Pick<RunRow, "tenant_id" | "id" | "pipeline_id" | "ir_version" | "attempts" | "node_results">;

const COLUMNS = "tenant_id, id, name, description, connector_id, schema_id, ir_version, status, current_version, schedule, watermarks, created_at, updated_at";
/**
 * The pipeline's columns and its current version's IR, in one query: the version row is looked up by
 * its primary key (tenant, pipeline, version), so a page costs one index probe per row, never a query.
 */
const WITH_IR = `${COLUMNS.split(", ").map((c) => `p.${c}`).join(", ")}, ir.ir AS current_ir
  FROM ingestion_pipelines p
  LEFT JOIN ingestion_pipeline_ir ir ON ir.tenant_id = p.tenant_id AND ir.pipeline_id = p.id AND ir.version = p.current_version`;
const RUN_COLUMNS = "tenant_id, id, pipeline_id, ir_version, trigger, ok, node_results, failed_node_id, error, attempts, dead_lettered, started_at, finished_at";

/** Pipelines, their IR versions, runs and dead letters. Tenant first, always. */
export class PipelineStore {
  constructor(private readonly db: Sequelize) {}

  async find(tenantId: string, id: string, t?: Transaction): Promise<PipelineRow | null> {
    const [row] = await selectRows<PipelineRow>(this.db, `SELECT ${COLUMNS} FROM ingestion_pipelines WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`, [tenantId, id], t);
    return row ?? null;
  }

  /** One pipeline with its current IR, for answers (no lock: writers use `find` with their transaction). */
  async findWithIr(tenantId: string, id: string): Promise<PipelineWithIr | null> {
    const [row] = await selectRows<PipelineWithIr>(this.db, `SELECT ${WITH_IR} WHERE p.tenant_id = $1 AND p.id = $2`, [tenantId, id]);
    return row ?? null;
  }

  page(tenantId: string, page: CursorPageRequest): Promise<PipelineWithIr[]> {
    return selectRows<PipelineWithIr>(
      this.db,
      `SELECT ${WITH_IR} WHERE p.tenant_id = $1 AND ($2::uuid IS NULL OR p.id < $2) ORDER BY p.id DESC LIMIT $3`,
      [tenantId, page.cursor, page.limit + 1],
    );
  }

  async insert(t: Transaction, tenantId: string, row: Pick<PipelineRow, "id" | "name" | "description" | "connector_id" | "schema_id" | "ir_version" | "schedule">): Promise<PipelineRow> {
    const [inserted] = await execReturning<PipelineRow>(
      this.db,
      `INSERT INTO ingestion_pipelines (tenant_id, id, name, description, connector_id, schema_id, ir_version, schedule)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
      [tenantId, row.id, row.name, row.description, row.connector_id, row.schema_id, row.ir_version, row.schedule],
      t,
    );
    return inserted;
  }

  /**
   * The next IR version of a pipeline the caller has locked (find with `t`), made current, with the
   * schemas it targets recorded for DELETE's in-use check.
   */
  async addVersion(t: Transaction, tenantId: string, pipeline: PipelineRow, ir: Record<string, unknown>, comment: string, actor: string | null, targetSchemas: string[]): Promise<{ pipeline: PipelineRow; version: IrVersionRow }> {
    const next = pipeline.current_version + 1;
    const [version] = await execReturning<IrVersionRow>(
      this.db,
      `INSERT INTO ingestion_pipeline_ir (tenant_id, pipeline_id, version, ir, comment, created_by) VALUES ($1, $2, $3, $4, $5, $6)
       RETURNING version, ir, comment, created_by, created_at`,
      [tenantId, pipeline.id, next, JSON.stringify(ir), comment, actor],
      t,
    );
    const [updated] = await execReturning<PipelineRow>(
      this.db,
      `UPDATE ingestion_pipelines SET current_version = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [tenantId, pipeline.id, next],
      t,
    );
    await this.db.query("DELETE FROM ingestion_pipeline_targets WHERE tenant_id = $1 AND pipeline_id = $2", { bind: [tenantId, pipeline.id], transaction: t });
    if (targetSchemas.length) {
      await this.db.query(
        "INSERT INTO ingestion_pipeline_targets (tenant_id, pipeline_id, schema_id) SELECT $1, $2, s FROM unnest($3::uuid[]) AS s ON CONFLICT DO NOTHING",
        { bind: [tenantId, pipeline.id, targetSchemas], transaction: t },
      );
    }
    return { pipeline: updated, version };
  }

  async version(tenantId: string, pipelineId: string, version: number): Promise<IrVersionRow | null> {
    const [row] = await selectRows<IrVersionRow>(
      this.db,
      "SELECT version, ir, comment, created_by, created_at FROM ingestion_pipeline_ir WHERE tenant_id = $1 AND pipeline_id = $2 AND version = $3",
      [tenantId, pipelineId, version],
    );
    return row ?? null;
  }

  async remove(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM ingestion_pipelines WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }

  /** A new run, holding its lease for `leaseMs` (docs/ingestion.md, "Runs whose process stopped"). */
  async startRun(tenantId: string, run: Pick<RunRow, "id" | "pipeline_id" | "ir_version" | "trigger">, leaseMs: number): Promise<void> {
    await this.db.query(
      "INSERT INTO ingestion_runs (tenant_id, id, pipeline_id, ir_version, trigger, lease_until) VALUES ($1, $2, $3, $4, $5, now() + $6::float8 * interval '1 millisecond')",
      { bind: [tenantId, run.id, run.pipeline_id, run.ir_version, run.trigger, leaseMs] },
    );
  }

  /** Extends a run's lease; false once the run has been finished (by the sweep, when its lease had run out). */
  async renewLease(tenantId: string, id: string, leaseMs: number): Promise<boolean> {
    const [[row]] = (await this.db.query(
      "UPDATE ingestion_runs SET lease_until = now() + $3::float8 * interval '1 millisecond' WHERE tenant_id = $1 AND id = $2 AND finished_at IS NULL RETURNING id",
      { bind: [tenantId, id, leaseMs] },
    )) as [Array<{ id: string }>, unknown];
    return row !== undefined;
  }

  /**
   * Records a run's outcome, and its dead letter when it failed with the DLQ on, in one transaction.
   * Only an unfinished run is finished: false when the runner and the sweep both tried and the other
   * was first, so that a run gets one outcome and one dead letter whoever ends it.
   */
  async finishRun(tenantId: string, id: string, outcome: Pick<RunRow, "ok" | "node_results" | "failed_node_id" | "error" | "attempts" | "dead_lettered">): Promise<boolean> {
    return this.db.transaction(async (t) => {
      const [[run]] = (await this.db.query(
        `UPDATE ingestion_runs SET ok = $3, node_results = $4, failed_node_id = $5, error = $6, attempts = $7, dead_lettered = $8, finished_at = now()
         WHERE tenant_id = $1 AND id = $2 AND finished_at IS NULL RETURNING pipeline_id`,
        { bind: [tenantId, id, outcome.ok, JSON.stringify(outcome.node_results), outcome.failed_node_id, outcome.error, outcome.attempts, outcome.dead_lettered], transaction: t },
      )) as [Array<{ pipeline_id: string }>, unknown];
      if (!run) return false;
      // A pipeline is active from its first successful run.
      if (outcome.ok) {
        await this.db.query("UPDATE ingestion_pipelines SET status = 'active' WHERE tenant_id = $1 AND id = $2 AND status = 'draft'", { bind: [tenantId, run.pipeline_id], transaction: t });
      }
      if (outcome.dead_lettered) {
        await this.db.query(
          "INSERT INTO ingestion_dead_letters (tenant_id, run_id, pipeline_id, failed_node_id, error, attempts) VALUES ($1, $2, $3, $4, $5, $6)",
          { bind: [tenantId, id, run.pipeline_id, outcome.failed_node_id, outcome.error ?? "failed", outcome.attempts], transaction: t },
        );
      }
      return true;
    });
  }

  /**
   * Unfinished runs whose lease ran out (their process stopped without finishing them), across
   * tenants, claimed by taking their lease for `claimMs`: two sweeps never get the same run (the
   * second's row lock is skipped, or its recheck sees the new lease), and a sweep that dies before
   * finishing one leaves it to a sweep after `claimMs`. Rows from before leases (NULL) are taken once
   * they started `legacyAfterMs` ago.
   */
  claimExpiredRunsAcrossTenants(claimMs: number, legacyAfterMs: number, limit: number): Promise<ExpiredRun[]> {
    return execReturning<ExpiredRun>(
      this.db,
      `UPDATE ingestion_runs r SET lease_until = now() + $1::float8 * interval '1 millisecond'
       FROM (
         SELECT tenant_id, id FROM ingestion_runs
         WHERE finished_at IS NULL AND (lease_until < now() OR (lease_until IS NULL AND started_at < now() - $2::float8 * interval '1 millisecond'))
         ORDER BY started_at
         LIMIT $3
         FOR UPDATE SKIP LOCKED
       ) due
       WHERE r.tenant_id = due.tenant_id AND r.id = due.id
       RETURNING r.tenant_id, r.id, r.pipeline_id, r.ir_version, r.attempts, r.node_results`,
      [claimMs, legacyAfterMs, limit],
    );
  }

  runs(tenantId: string, pipelineId: string, limit: number): Promise<RunRow[]> {
    return selectRows<RunRow>(
      this.db,
      `SELECT ${RUN_COLUMNS} FROM ingestion_runs WHERE tenant_id = $1 AND pipeline_id = $2 ORDER BY started_at DESC, id DESC LIMIT $3`,
      [tenantId, pipelineId, limit],
    );
  }

  /** Sets one target's high-water mark inside the transaction that loaded up to it. */
  async setWatermark(t: Transaction, tenantId: string, pipelineId: string, nodeId: string, value: string): Promise<void> {
    await this.db.query("UPDATE ingestion_pipelines SET watermarks = watermarks || jsonb_build_object($3::text, $4::text) WHERE tenant_id = $1 AND id = $2", {
      bind: [tenantId, pipelineId, nodeId, value],
      transaction: t,
    });
  }

  /** Pipelines with a schedule, across tenants: the scheduler's job finds which are due. */
  scheduledAcrossTenants(): Promise<Array<{ tenant_id: string; id: string; schedule: string }>> {
    return selectRows(this.db, "SELECT tenant_id, id, schedule FROM ingestion_pipelines WHERE schedule IS NOT NULL AND current_version > 0", []);
  }
}

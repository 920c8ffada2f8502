import type { Sequelize } from "sequelize";
import { execReturning, retryingTransaction, selectRows, type Transaction } from "../platform/db.js";
import { deliveredStatus } from "./report-delivery.js";
import type { ReportNarrative, RenderedArtifact } from "./report-document.js";
import type { ArtifactMeta, StoredDelivery, StoredSection } from "./report-mapper.js";

export type ReportRunStatus = "running" | "completed" | "partially_delivered" | "failed";

export interface ReportRunRow {
  tenant_id: string;
  id: string;
  template_id: string;
  schedule_id: string | null;
  slot: Date | null;
  status: ReportRunStatus;
  triggered_by: "manual" | "cron";
  started_at: Date;
  completed_at: Date | null;
  duration_ms: number | null;
  delivery_results: StoredDelivery[];
  error: string | null;
  time_zone: string;
  period_from: Date | null;
  period_to: Date | null;
}

export interface ReportRunDetailRow extends ReportRunRow {
  sections_data: StoredSection[];
  narrative_output: ReportNarrative | null;
}

/** The columns a list reads: never the section data, never a payload. */
const SUMMARY = `tenant_id, id, template_id, schedule_id, slot, status, triggered_by, started_at, completed_at, duration_ms,
  delivery_results, error, time_zone, period_from, period_to`;

export interface RunStart {
  id: string;
  templateId: string;
  scheduleId: string | null;
  slot: Date | null;
  triggeredBy: "manual" | "cron";
}

export interface RunProduct {
  sections: StoredSection[];
  narrative: ReportNarrative | null;
  timeZone: string;
  period: { from: Date; to: Date } | null;
  artifacts: RenderedArtifact[];
}

/** report_runs and report_artifacts, tenant first. */
export class ReportRunStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * A new running run; null when the schedule's slot already has a finished one (the unique index).
   * A slot's run still `running` is taken over, under its id: only the holder of the slot's claim
   * starts a scheduled run, and a claim passes on only when its holder stopped renewing it, so that
   * run's process died (it stayed `running` for good, and the slot was marked done without a report).
   */
  async start(tenantId: string, r: RunStart, leaseMs: number): Promise<ReportRunRow | null> {
    const [row] = await execReturning<ReportRunRow>(
      this.db,
      `INSERT INTO report_runs (tenant_id, id, template_id, schedule_id, slot, status, triggered_by, lease_until)
       VALUES ($1, $2, $3, $4, $5, 'running', $6, now() + $7::float8 * interval '1 millisecond')
       ON CONFLICT (tenant_id, schedule_id, slot) WHERE schedule_id IS NOT NULL
       DO UPDATE SET started_at = now(), lease_until = EXCLUDED.lease_until WHERE report_runs.status = 'running' RETURNING ${SUMMARY}`,
      [tenantId, r.id, r.templateId, r.scheduleId, r.slot, r.triggeredBy, leaseMs],
    );
    return row ?? null;
  }

  /** Extends a running run's lease; false once it has ended (the sweep ended it, its lease having run out). */
  async renewLease(tenantId: string, id: string, leaseMs: number): Promise<boolean> {
    const rows = await execReturning<{ id: string }>(
      this.db,
      "UPDATE report_runs SET lease_until = now() + $3::float8 * interval '1 millisecond' WHERE tenant_id = $1 AND id = $2 AND status = 'running' RETURNING id",
      [tenantId, id, leaseMs],
    );
    return rows.length > 0;
  }

  /**
   * Ends as failed, across tenants, the runs whose process stopped before they ended (docs/reports.md,
   * "Runs whose process stopped"): a run-now once its lease ran out; a scheduled run, which its
   * slot's next claim holder takes over instead, only when no take-over came for `unclaimedMs`
   * after that (its schedule was paused or deleted meanwhile); a run from before leases once it
   * started that long ago. One statement: two sweeps at once end each run once. How many.
   */
  async failExpiredAcrossTenants(error: string, unclaimedMs: number): Promise<number> {
    const rows = await execReturning<{ id: string }>(
      this.db,
      `UPDATE report_runs SET status = 'failed', error = $1, lease_until = NULL, completed_at = now(),
         duration_ms = round(extract(epoch FROM now() - started_at) * 1000)::int
       WHERE status = 'running' AND (
         (lease_until < now() AND (triggered_by = 'manual' OR lease_until < now() - $2::float8 * interval '1 millisecond'))
         OR (lease_until IS NULL AND started_at < now() - $2::float8 * interval '1 millisecond'))
       RETURNING id`,
      [error, unclaimedMs],
    );
    return rows.length;
  }

  /**
   * The computed sections, narrative and artifacts, in one transaction: a run has all of them or
   * none, and a run taken over replaces what its dead process saved.
   */
  async saveProduct(tenantId: string, runId: string, p: RunProduct): Promise<void> {
    await retryingTransaction(this.db, async (t) => {
      await this.db.query("DELETE FROM report_artifacts WHERE tenant_id = $1 AND run_id = $2", { bind: [tenantId, runId], transaction: t });
      await this.db.query(
        `UPDATE report_runs SET sections_data = $3, narrative_output = $4, time_zone = $5, period_from = $6, period_to = $7
         WHERE tenant_id = $1 AND id = $2`,
        { bind: [tenantId, runId, JSON.stringify(p.sections), p.narrative ? JSON.stringify(p.narrative) : null, p.timeZone, p.period?.from ?? null, p.period?.to ?? null], transaction: t },
      );
      for (const a of p.artifacts) {
        await this.db.query(
          `INSERT INTO report_artifacts (tenant_id, run_id, format, mime_type, file_name, bytes, content) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          { bind: [tenantId, runId, a.format, a.mimeType, a.fileName, a.bytes.byteLength, Buffer.from(a.bytes)], transaction: t },
        );
      }
    });
  }

  /** Ends a running run; one the sweep ended meanwhile keeps the sweep's end, which is answered. */
  async finish(tenantId: string, runId: string, status: Exclude<ReportRunStatus, "running">, deliveries: StoredDelivery[], error: string | null): Promise<ReportRunRow> {
    const [row] = await execReturning<ReportRunRow>(
      this.db,
      `UPDATE report_runs SET status = $3, delivery_results = $4, error = $5, lease_until = NULL, completed_at = now(),
         duration_ms = round(extract(epoch FROM now() - started_at) * 1000)::int
       WHERE tenant_id = $1 AND id = $2 AND status = 'running' RETURNING ${SUMMARY}`,
      [tenantId, runId, status, JSON.stringify(deliveries), error],
    );
    return row ?? (await selectRows<ReportRunRow>(this.db, `SELECT ${SUMMARY} FROM report_runs WHERE tenant_id = $1 AND id = $2`, [tenantId, runId]))[0];
  }

  /**
   * A destination's delivery that the redelivery sweep ended after the run had recorded it as not
   * delivered: the run's result for it, and its status, follow. A run still running, or one that
   * was never produced, is left as it is.
   */
  async recordRedelivery(tenantId: string, runId: string, delivery: StoredDelivery): Promise<void> {
    await retryingTransaction(this.db, async (t) => {
      const [run] = await selectRows<Pick<ReportRunRow, "status" | "delivery_results" | "error">>(
        this.db,
        "SELECT status, delivery_results, error FROM report_runs WHERE tenant_id = $1 AND id = $2 FOR UPDATE",
        [tenantId, runId],
        t,
      );
      if (!run || run.status === "running" || run.error !== null) return;
      const results = run.delivery_results.map((d) => (d.providerId === delivery.providerId ? delivery : d));
      await this.db.query("UPDATE report_runs SET delivery_results = $3, status = $4 WHERE tenant_id = $1 AND id = $2", {
        bind: [tenantId, runId, JSON.stringify(results), deliveredStatus(results)],
        transaction: t,
      });
    });
  }

  async page(tenantId: string, templateId: string | null, limit: number, offset: number): Promise<{ rows: ReportRunRow[]; total: number }> {
    const bind = [tenantId, templateId];
    const where = `tenant_id = $1 AND ($2::uuid IS NULL OR template_id = $2)`;
    const [rows, [count]] = await Promise.all([
      selectRows<ReportRunRow>(this.db, `SELECT ${SUMMARY} FROM report_runs WHERE ${where} ORDER BY started_at DESC, id DESC LIMIT $3 OFFSET $4`, [...bind, limit, offset]),
      selectRows<{ total: number }>(this.db, `SELECT count(*)::int AS total FROM report_runs WHERE ${where}`, bind),
    ]);
    return { rows, total: count.total };
  }

  async find(tenantId: string, id: string): Promise<ReportRunDetailRow | null> {
    const [row] = await selectRows<ReportRunDetailRow>(this.db, "SELECT * FROM report_runs WHERE tenant_id = $1 AND id = $2", [tenantId, id]);
    return row ?? null;
  }

  /** Artifact metadata of these runs, without payloads. */
  async artifactMeta(tenantId: string, runIds: readonly string[]): Promise<Map<string, ArtifactMeta[]>> {
    const rows = await selectRows<ArtifactMeta & { runId: string }>(
      this.db,
      `SELECT run_id AS "runId", format, mime_type AS "mimeType", file_name AS "fileName", bytes FROM report_artifacts
       WHERE tenant_id = $1 AND run_id = ANY($2::uuid[]) ORDER BY run_id, array_position(ARRAY['pdf', 'csv', 'markdown', 'html'], format)`,
      [tenantId, runIds],
    );
    const out = new Map<string, ArtifactMeta[]>();
    for (const { runId, ...meta } of rows) out.set(runId, [...(out.get(runId) ?? []), meta]);
    return out;
  }

  async artifact(tenantId: string, runId: string, format: string): Promise<(ArtifactMeta & { content: Buffer }) | null> {
    const [row] = await selectRows<ArtifactMeta & { content: Buffer }>(
      this.db,
      `SELECT format, mime_type AS "mimeType", file_name AS "fileName", bytes, content FROM report_artifacts WHERE tenant_id = $1 AND run_id = $2 AND format = $3`,
      [tenantId, runId, format],
    );
    return row ?? null;
  }

  /** Part of the workspace reset, in its transaction (artifacts go with their runs). */
  async deleteAll(t: Transaction, tenantId: string): Promise<void> {
    await this.db.query("DELETE FROM report_runs WHERE tenant_id = $1", { bind: [tenantId], transaction: t });
  }
}

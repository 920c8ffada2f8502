import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";

export interface ReportScheduleRow {
  tenant_id: string;
  id: string;
  template_id: string;
  name: string;
  cron_expression: string;
  timezone: string;
  destinations: string[];
  enabled: boolean;
  next_run_at: Date | null;
  last_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type ReportScheduleValues = Pick<ReportScheduleRow, "template_id" | "name" | "cron_expression" | "timezone" | "destinations" | "enabled" | "next_run_at">;

const bind = (v: ReportScheduleValues) => [v.template_id, v.name, v.cron_expression, v.timezone, v.destinations, v.enabled, v.next_run_at];

/** report_schedules, tenant first; the due read works across tenants for the scheduler's job. */
export class ReportScheduleStore {
  constructor(private readonly db: Sequelize) {}

  list(tenantId: string, templateId: string | null): Promise<ReportScheduleRow[]> {
    return selectRows(
      this.db,
      `SELECT * FROM report_schedules WHERE tenant_id = $1 AND ($2::uuid IS NULL OR template_id = $2) ORDER BY created_at DESC, id DESC`,
      [tenantId, templateId],
    );
  }

  async find(tenantId: string, id: string, t?: Transaction): Promise<ReportScheduleRow | null> {
    const [row] = await selectRows<ReportScheduleRow>(
      this.db,
      `SELECT * FROM report_schedules WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  async insert(t: Transaction, tenantId: string, id: string, v: ReportScheduleValues): Promise<ReportScheduleRow> {
    const [row] = await execReturning<ReportScheduleRow>(
      this.db,
      `INSERT INTO report_schedules (tenant_id, id, template_id, name, cron_expression, timezone, destinations, enabled, next_run_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING *`,
      [tenantId, id, ...bind(v)],
      t,
    );
    return row;
  }

  async update(t: Transaction, tenantId: string, id: string, v: ReportScheduleValues): Promise<ReportScheduleRow> {
    const [row] = await execReturning<ReportScheduleRow>(
      this.db,
      `UPDATE report_schedules SET template_id = $3, name = $4, cron_expression = $5, timezone = $6, destinations = $7, enabled = $8,
         next_run_at = $9, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, id, ...bind(v)],
      t,
    );
    return row;
  }

  async delete(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM report_schedules WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }

  /** Enabled schedules of every tenant whose next run is at or before `at`. */
  dueAcrossTenants(at: Date): Promise<ReportScheduleRow[]> {
    return selectRows(this.db, "SELECT * FROM report_schedules WHERE enabled AND next_run_at <= $1 ORDER BY next_run_at, tenant_id, id", [at]);
  }

  /**
   * Moves a schedule past the slot it ran, unless it changed meanwhile (its next_run_at is no longer
   * the one that was due): an edit's recomputed nextRunAt wins over a run that started before it.
   */
  async advance(tenantId: string, id: string, dueAt: Date, slot: Date, next: Date | null): Promise<void> {
    await this.db.query(
      "UPDATE report_schedules SET next_run_at = $5, last_run_at = $4 WHERE tenant_id = $1 AND id = $2 AND next_run_at = $3",
      { bind: [tenantId, id, dueAt, slot, next] },
    );
  }
}

import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { HealthAlertInput, HealthSeverity } from "./operational-signals.js";

export type HealthAlertStatus = "open" | "resolved";

export interface HealthAlertRow {
  tenant_id: string;
  id: string;
  key: string;
  severity: HealthSeverity;
  message: string;
  details: Record<string, unknown>;
  status: HealthAlertStatus;
  raised_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
}

/** The health_alerts table (migration 0011). Tenant first, always. */
export class HealthAlertStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Opens the alert, or updates the open one with the same key: the partial unique index makes this
   * one statement safe against a concurrent raise in another process. `opened` says which it was
   * (a row inserted by this statement has xmax 0).
   */
  async raise(tenantId: string, id: string, alert: HealthAlertInput): Promise<{ row: HealthAlertRow; opened: boolean }> {
    const [row] = await execReturning<HealthAlertRow & { opened: boolean }>(
      this.db,
      `INSERT INTO health_alerts (tenant_id, id, key, severity, message, details)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (tenant_id, key) WHERE status = 'open'
       DO UPDATE SET severity = EXCLUDED.severity, message = EXCLUDED.message, details = EXCLUDED.details, updated_at = now()
       RETURNING *, (xmax = 0) AS opened`,
      [tenantId, id, alert.key, alert.severity, alert.message, JSON.stringify(alert.details ?? {})],
    );
    const { opened, ...stored } = row;
    return { row: stored, opened };
  }

  /** Resolves the open alert with this key; false when none was open. */
  async resolve(tenantId: string, key: string): Promise<boolean> {
    const rows = await execReturning<{ id: string }>(
      this.db,
      `UPDATE health_alerts SET status = 'resolved', resolved_at = now(), updated_at = now()
       WHERE tenant_id = $1 AND key = $2 AND status = 'open' RETURNING id`,
      [tenantId, key],
    );
    return rows.length > 0;
  }

  /** A workspace reset's share: the alerts were about data that is gone. */
  async deleteAll(t: Transaction, tenantId: string): Promise<void> {
    await this.db.query("DELETE FROM health_alerts WHERE tenant_id = $1", { bind: [tenantId], transaction: t });
  }

  /** Most recently updated first; `status` null lists both. */
  list(tenantId: string, status: HealthAlertStatus | null, limit: number): Promise<HealthAlertRow[]> {
    return selectRows<HealthAlertRow>(
      this.db,
      `SELECT * FROM health_alerts WHERE tenant_id = $1 AND ($2::text IS NULL OR status = $2)
       ORDER BY updated_at DESC, id DESC LIMIT $3`,
      [tenantId, status, limit],
    );
  }
}

import type { Sequelize } from "sequelize";
import type { JsonValue } from "@bufbuild/protobuf";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { AlertStatus } from "../core/index.js";

export interface AlertRuleRow {
  tenant_id: string;
  id: string;
  name: string;
  metric: string;
  operator: string;
  threshold: number;
  window_minutes: number;
  /** As the caller wrote them (alert-channels.ts parses them). */
  channels: JsonValue[];
  cooldown_minutes: number;
  enabled: boolean;
  status: AlertStatus;
  last_fired_at: Date | null;
  last_evaluated_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns a create or update writes. */
export type AlertRuleValues = Partial<Pick<AlertRuleRow,
  "name" | "metric" | "operator" | "threshold" | "window_minutes" | "channels" | "cooldown_minutes" | "enabled" | "status">>;

/** What one evaluation leaves on a rule. */
export interface AlertEvaluation {
  status: AlertStatus;
  lastFiredAt: Date | null;
  slot: Date;
}

/** The column names of AlertRuleValues, fixed here: request input never names a column. */
const WRITABLE = new Set(["name", "metric", "operator", "threshold", "window_minutes", "channels", "cooldown_minutes", "enabled", "status"]);

function bindValue(column: string, value: unknown): unknown {
  return column === "channels" ? JSON.stringify(value) : value;
}

/** alert_rules, tenant first. Writes run in the caller's transaction (which holds the tenant's write lock). */
export class AlertRuleStore {
  constructor(private readonly db: Sequelize) {}

  list(tenantId: string): Promise<AlertRuleRow[]> {
    return selectRows<AlertRuleRow>(this.db, "SELECT * FROM alert_rules WHERE tenant_id = $1 ORDER BY created_at DESC, id DESC", [tenantId]);
  }

  async find(tenantId: string, id: string, t?: Transaction): Promise<AlertRuleRow | null> {
    const [row] = await selectRows<AlertRuleRow>(
      this.db,
      `SELECT * FROM alert_rules WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  async insert(t: Transaction, tenantId: string, id: string, values: AlertRuleValues): Promise<AlertRuleRow> {
    const columns = Object.keys(values).filter((c) => WRITABLE.has(c));
    const bind = [tenantId, id, ...columns.map((c) => bindValue(c, values[c as keyof AlertRuleValues]))];
    const [row] = await execReturning<AlertRuleRow>(
      this.db,
      `INSERT INTO alert_rules (tenant_id, id, ${columns.join(", ")}) VALUES ($1, $2, ${columns.map((_, i) => `$${i + 3}`).join(", ")}) RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  async update(t: Transaction, tenantId: string, id: string, values: AlertRuleValues): Promise<AlertRuleRow> {
    const columns = Object.keys(values).filter((c) => WRITABLE.has(c));
    const sets = columns.map((c, i) => `${c} = $${i + 3}`);
    const [row] = await execReturning<AlertRuleRow>(
      this.db,
      `UPDATE alert_rules SET ${[...sets, "updated_at = now()"].join(", ")} WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, id, ...columns.map((c) => bindValue(c, values[c as keyof AlertRuleValues]))],
      t,
    );
    return row;
  }

  async delete(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM alert_rules WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }

  /** Names of the rules whose channels name the provider, as an id or as {providerId} (alert-channels.ts). */
  async namesUsingProvider(tenantId: string, providerId: string, t: Transaction): Promise<string[]> {
    const rows = await selectRows<{ name: string }>(
      this.db,
      `SELECT name FROM alert_rules WHERE tenant_id = $1
         AND EXISTS (SELECT 1 FROM jsonb_array_elements(channels) c
                      WHERE lower(CASE jsonb_typeof(c) WHEN 'string' THEN c #>> '{}' ELSE c ->> 'providerId' END) = $2)
       ORDER BY name`,
      [tenantId, providerId.toLowerCase()],
      t,
    );
    return rows.map((r) => r.name);
  }

  /** Part of the workspace reset, in its transaction: alert rules are the tenant's configuration. */
  async deleteAll(t: Transaction, tenantId: string): Promise<void> {
    await this.db.query("DELETE FROM alert_rules WHERE tenant_id = $1", { bind: [tenantId], transaction: t });
  }

  /** Enabled rules the evaluator has not finished for `slot`, of every tenant. */
  dueAcrossTenants(slot: Date): Promise<AlertRuleRow[]> {
    return selectRows<AlertRuleRow>(
      this.db,
      "SELECT * FROM alert_rules WHERE enabled AND (last_evaluated_at IS NULL OR last_evaluated_at < $1) ORDER BY tenant_id, id",
      [slot],
    );
  }

  /**
   * Records an evaluation unless the slot was already recorded (a concurrent run of the same slot):
   * status and last_fired_at move once per slot. Not a configuration change: no version, no audit.
   */
  /**
   * An alert of `slot` that reached nobody when it was evaluated and that the redelivery sweep
   * delivered later (docs/alerts.md): it fired at its slot, so its cooldown starts there, and the
   * rule reads `fired` unless a later slot has been evaluated since.
   */
  async recordLateDelivery(tenantId: string, id: string, slot: Date): Promise<void> {
    await this.db.query(
      `UPDATE alert_rules SET last_fired_at = $3,
         status = CASE WHEN last_evaluated_at = $3 AND status = 'delivery_failed' THEN 'fired' ELSE status END
       WHERE tenant_id = $1 AND id = $2 AND (last_fired_at IS NULL OR last_fired_at < $3)`,
      { bind: [tenantId, id, slot] },
    );
  }

  async recordEvaluation(tenantId: string, id: string, e: AlertEvaluation): Promise<boolean> {
    const rows = await execReturning<{ id: string }>(
      this.db,
      `UPDATE alert_rules SET status = $3, last_fired_at = $4, last_evaluated_at = $5
       WHERE tenant_id = $1 AND id = $2 AND (last_evaluated_at IS NULL OR last_evaluated_at < $5) RETURNING id`,
      [tenantId, id, e.status, e.lastFiredAt, e.slot],
    );
    return rows.length > 0;
  }
}

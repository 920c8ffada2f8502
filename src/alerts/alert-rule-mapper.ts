import { create, fromJson, toJson } from "@bufbuild/protobuf";
import { ListValueSchema, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AlertRuleSchema, type AlertRule } from "../../gen/decisioning/v1/alerts_pb.js";
import type { AlertRuleRow } from "./alert-rule-store.js";

export function toAlertRule(row: AlertRuleRow): AlertRule {
  return create(AlertRuleSchema, {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    metric: row.metric,
    operator: row.operator,
    threshold: row.threshold,
    windowMinutes: row.window_minutes,
    channels: fromJson(ListValueSchema, row.channels),
    cooldownMinutes: row.cooldown_minutes,
    enabled: row.enabled,
    lastFiredAt: row.last_fired_at ? timestampFromDate(row.last_fired_at) : undefined,
    status: row.status,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

/** Audit snapshots are the rule as the API shows it (spec 2.6: full snapshot). */
export function alertRuleSnapshot(row: AlertRuleRow): Record<string, unknown> {
  return toJson(AlertRuleSchema, toAlertRule(row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}

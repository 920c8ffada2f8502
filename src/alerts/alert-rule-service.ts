import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { EmptySchema, ListValueSchema, type Empty } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  ListAlertRulesResponseSchema,
  type AlertRule,
  type AlertRuleIdRequest,
  type AlertRuleWrite,
  type ListAlertRulesResponse,
} from "../../gen/decisioning/v1/alerts_pb.js";
import { isAlertOperator, ALERT_OPERATORS } from "../core/index.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { parseChannels, unknownProviderViolations, type ProviderDirectory } from "./alert-channels.js";
import { isRecognizedMetric } from "./alert-metrics.js";
import { alertRuleSnapshot, toAlertRule } from "./alert-rule-mapper.js";
import type { AlertRuleRow, AlertRuleStore, AlertRuleValues } from "./alert-rule-store.js";

/** Spec 2.8 defaults. */
export const DEFAULT_WINDOW_MINUTES = 5;
export const DEFAULT_COOLDOWN_MINUTES = 60;
/** Bounds that keep a window's read of the decision tables bounded: 30 days, and a year of cooldown. */
const MAX_WINDOW_MINUTES = 43_200;
const MAX_COOLDOWN_MINUTES = 525_600;
const MAX_NAME = 255;
const MAX_METRIC = 100;

/** A recognized metric starts (and, when the metric changes, restarts) ok; any other is unsupported at once. */
const initialStatus = (metric: string) => (isRecognizedMetric(metric) ? "ok" : "unsupported_metric");

/**
 * Alert rule CRUD (spec 4.6). Every write holds the tenant's write lock and is audit-logged in its
 * transaction, like every configuration write. Status and lastFiredAt are the evaluator's.
 */
export class AlertRuleService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: AlertRuleStore,
    private readonly audit: AuditLog,
    private readonly providers: ProviderDirectory,
  ) {}

  async listAlertRules(ctx: TenantContext): Promise<ListAlertRulesResponse> {
    return create(ListAlertRulesResponseSchema, { data: (await this.store.list(ctx.tenantId)).map(toAlertRule) });
  }

  async getAlertRule(ctx: TenantContext, req: AlertRuleIdRequest): Promise<AlertRule> {
    return toAlertRule(await this.mustFind(ctx.tenantId, req.id));
  }

  async createAlertRule(ctx: TenantContext, req: AlertRuleWrite): Promise<AlertRule> {
    const values = await this.validate(ctx, req, "create");
    values.status = initialStatus(values.metric!);
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const created = await this.store.insert(t, ctx.tenantId, newId(), values);
      await this.record(t, ctx, "create", null, created);
      return created;
    });
    return toAlertRule(row);
  }

  async updateAlertRule(ctx: TenantContext, req: AlertRuleWrite): Promise<AlertRule> {
    await this.mustFind(ctx.tenantId, req.id);
    const values = await this.validate(ctx, req, "update");
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      if (values.metric !== undefined && values.metric !== before.metric) values.status = initialStatus(values.metric);
      const after = await this.store.update(t, ctx.tenantId, before.id, values);
      await this.record(t, ctx, "update", before, after);
      return after;
    });
    return toAlertRule(row);
  }

  async deleteAlertRule(ctx: TenantContext, req: AlertRuleIdRequest): Promise<Empty> {
    await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      await this.store.delete(t, ctx.tenantId, before.id);
      await this.record(t, ctx, "delete", before, null);
    });
    return create(EmptySchema);
  }

  /** Spec 4.6: another tenant's rule, like a missing one, is 404. */
  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<AlertRuleRow> {
    const row = isUuid(id) ? await this.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("alert rule", id);
    return row;
  }

  /**
   * The columns a write sets, every field named in its own violation (spec 7: 400 naming the
   * field, nothing written). Create needs name, metric, operator, threshold and channels; update
   * checks only what it is sent.
   */
  private async validate(ctx: TenantContext, req: AlertRuleWrite, mode: "create" | "update"): Promise<AlertRuleValues> {
    const violations: FieldViolation[] = [];
    const values: AlertRuleValues = {};
    const required = (field: string, present: boolean) => {
      if (mode === "create" && !present) violations.push({ field, message: "is required" });
      return present;
    };
    if (required("name", req.name !== undefined)) {
      const name = req.name!.trim();
      if (!name || name.length > MAX_NAME) violations.push({ field: "name", message: `must be 1-${MAX_NAME} characters` });
      values.name = name;
    }
    if (required("metric", req.metric !== undefined)) {
      const metric = req.metric!.trim();
      if (!metric || metric.length > MAX_METRIC) violations.push({ field: "metric", message: `must be 1-${MAX_METRIC} characters` });
      values.metric = metric;
    }
    if (required("operator", req.operator !== undefined)) {
      if (!isAlertOperator(req.operator!)) violations.push({ field: "operator", message: `must be one of ${ALERT_OPERATORS.join(", ")}` });
      values.operator = req.operator;
    }
    if (required("threshold", req.threshold !== undefined)) {
      if (!Number.isFinite(req.threshold)) violations.push({ field: "threshold", message: "must be a finite number" });
      values.threshold = req.threshold;
    }
    const bounded = (field: string, value: number | undefined, min: number, max: number, exclusiveMin: boolean) => {
      if (value === undefined) return undefined;
      if (!Number.isFinite(value) || value > max || (exclusiveMin ? value <= min : value < min)) {
        violations.push({ field, message: `must be ${exclusiveMin ? "greater than" : "at least"} ${min} and at most ${max}` });
      }
      return value;
    };
    values.window_minutes = bounded("windowMinutes", req.windowMinutes, 0, MAX_WINDOW_MINUTES, true) ?? (mode === "create" ? DEFAULT_WINDOW_MINUTES : undefined);
    values.cooldown_minutes = bounded("cooldownMinutes", req.cooldownMinutes, 0, MAX_COOLDOWN_MINUTES, false) ?? (mode === "create" ? DEFAULT_COOLDOWN_MINUTES : undefined);
    values.enabled = req.enabled ?? (mode === "create" ? true : undefined);
    let channels: JsonValue[] | null = null;
    if (required("channels", req.channels !== undefined)) {
      channels = toJson(ListValueSchema, req.channels!) as JsonValue[];
      const parsed = parseChannels(channels);
      violations.push(...parsed.violations);
      if (!parsed.violations.length) violations.push(...(await unknownProviderViolations(this.providers, ctx.tenantId, channels, parsed.destinations)));
      values.channels = channels;
    }
    if (violations.length) throw invalidFields(violations);
    for (const key of Object.keys(values) as Array<keyof AlertRuleValues>) if (values[key] === undefined) delete values[key];
    return values;
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "delete", before: AlertRuleRow | null, after: AlertRuleRow | null) {
    const row = (after ?? before)!;
    return this.audit.record(t, ctx, {
      action,
      entityType: "alert_rule",
      entityId: row.id,
      entityName: row.name,
      before: before ? alertRuleSnapshot(before) : null,
      after: after ? alertRuleSnapshot(after) : null,
      entityVersion: null,
    });
  }
}

import { create, toJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { TenantSettingsSchema, type TenantSettings, type TenantSettingsWrite } from "../../gen/decisioning/v1/configuration_pb.js";
import type { Sequelize } from "sequelize";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import type { InvalidatedCache } from "../platform/invalidated-cache.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { DecisionStore, SettingsRow } from "./decision-store.js";

const MAX_RAMP_DAYS = 365;

function toSettings(row: SettingsRow): TenantSettings {
  return create(TenantSettingsSchema, {
    decisionTraceEnabled: row.decision_trace_enabled,
    decisionTraceSampleRate: row.decision_trace_sample_rate,
    maturityRampDays: row.maturity_ramp_days,
    maturityRampStartFraction: row.maturity_ramp_start_fraction,
    aiAnalyzerSettings: { llmExplanationsEnabled: row.llm_explanations_enabled },
    requirePublishApproval: row.require_publish_approval,
    updatedAt: row.updated_at ? timestampFromDate(row.updated_at) : undefined,
  });
}

/** The settings as the audit log keeps them: what the API shows. */
const auditSnapshot = (row: SettingsRow) => toJson(TenantSettingsSchema, toSettings(row), { alwaysEmitImplicit: true }) as JsonObject;

/**
 * Tenant settings (spec 2.16): tracing, the maturity ramp, and the opt-ins to explanations (4.11)
 * and publish approvals (3.5). They are part of the compiled snapshot, so a change invalidates it
 * in every process; they are configuration, so a change is audited like any other.
 */
export class TenantSettingsService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: DecisionStore,
    private readonly audit: AuditLog,
    private readonly snapshots: InvalidatedCache<unknown>,
  ) {}

  async getTenantSettings(ctx: TenantContext): Promise<TenantSettings> {
    return toSettings(await this.store.settings(ctx.tenantId));
  }

  async updateTenantSettings(ctx: TenantContext, req: TenantSettingsWrite): Promise<TenantSettings> {
    const violations: FieldViolation[] = [];
    const rate = req.decisionTraceSampleRate;
    if (rate !== undefined && !(rate >= 0 && rate <= 1)) violations.push({ field: "decisionTraceSampleRate", message: "must be between 0 and 1" });
    const days = req.maturityRampDays;
    if (days !== undefined && !(days >= 0 && days <= MAX_RAMP_DAYS)) violations.push({ field: "maturityRampDays", message: `must be between 0 and ${MAX_RAMP_DAYS}` });
    const fraction = req.maturityRampStartFraction;
    const llmExplanations = req.aiAnalyzerSettings?.llmExplanationsEnabled;
    if (fraction !== undefined && !(fraction >= 0 && fraction <= 1)) violations.push({ field: "maturityRampStartFraction", message: "must be between 0 and 1" });
    if (violations.length) throw invalidFields(violations);
    const changes: Partial<SettingsRow> = {
      ...(req.decisionTraceEnabled !== undefined && { decision_trace_enabled: req.decisionTraceEnabled }),
      ...(rate !== undefined && { decision_trace_sample_rate: rate }),
      ...(days !== undefined && { maturity_ramp_days: days }),
      ...(fraction !== undefined && { maturity_ramp_start_fraction: fraction }),
      ...(llmExplanations !== undefined && { llm_explanations_enabled: llmExplanations }),
      ...(req.requirePublishApproval !== undefined && { require_publish_approval: req.requirePublishApproval }),
    };
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.store.settings(ctx.tenantId, t);
      const after = await this.store.saveSettings(t, ctx.tenantId, { ...before, ...changes });
      await this.audit.record(t, ctx, {
        action: "update",
        entityType: "tenant_settings",
        entityId: ctx.tenantId,
        entityName: "tenant settings",
        before: auditSnapshot(before),
        after: auditSnapshot(after),
        entityVersion: null,
      });
      return after;
    });
    await this.snapshots.invalidate(ctx.tenantId);
    return toSettings(row);
  }
}

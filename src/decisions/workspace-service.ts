import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  CustomerSchema,
  TenantSettingsSchema,
  WorkspaceUsageSchema,
  type Customer,
  type GetCustomerRequest,
  type PutCustomerRequest,
  type ResetWorkspaceRequest,
  type TenantSettings,
  type TenantSettingsWrite,
  type WorkspaceUsage,
} from "../../gen/decisioning/v1/configuration_pb.js";
import {
  ListDecisionTracesResponseSchema,
  type DecisionTrace,
  type GetDecisionTraceRequest,
  type ListDecisionTracesRequest,
  type ListDecisionTracesResponse,
} from "../../gen/decisioning/v1/decisions_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import { limitOffsetRequest } from "../platform/pagination.js";
import type { InvalidatedCache } from "../platform/invalidated-cache.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { Counters } from "./counters.js";
import type { CustomerRow, DecisionStore, SettingsRow } from "./decision-store.js";
import { toTraceSummary } from "./decision-mapper.js";
import type { TraceReader } from "./trace-reader.js";

const MAX_CUSTOMER_ID = 255;
const MAX_RAMP_DAYS = 365;

function toSettings(row: SettingsRow): TenantSettings {
  return create(TenantSettingsSchema, {
    decisionTraceEnabled: row.decision_trace_enabled,
    decisionTraceSampleRate: row.decision_trace_sample_rate,
    maturityRampDays: row.maturity_ramp_days,
    maturityRampStartFraction: row.maturity_ramp_start_fraction,
    updatedAt: row.updated_at ? timestampFromDate(row.updated_at) : undefined,
  });
}

function toCustomer(tenantId: string, row: CustomerRow): Customer {
  return create(CustomerSchema, {
    customerId: row.customer_id,
    tenantId,
    attributes: row.attributes as JsonObject,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

function customerIdOf(raw: string): string {
  const id = raw.trim();
  if (!id || id.length > MAX_CUSTOMER_ID) throw invalidField("customerId", `must be 1 to ${MAX_CUSTOMER_ID} characters`);
  return id;
}

/** Tenant settings, usage and reset; customers; decision traces (spec 2.16, 4.11). */
export class WorkspaceService {
  constructor(
    private readonly store: DecisionStore,
    private readonly counters: Pick<Counters, "decisionCounter" | "wipe">,
    private readonly snapshots: InvalidatedCache<unknown>,
    private readonly customers: InvalidatedCache<Record<string, unknown>>,
    private readonly audit: AuditLog,
    private readonly seedTenant: (t: Transaction, ctx: TenantContext) => Promise<void>,
    private readonly decisionQuota: number | null,
    private readonly traces: TraceReader,
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
    if (fraction !== undefined && !(fraction >= 0 && fraction <= 1)) violations.push({ field: "maturityRampStartFraction", message: "must be between 0 and 1" });
    if (violations.length) throw invalidFields(violations);
    const row = await this.store.saveSettings(ctx.tenantId, {
      ...(req.decisionTraceEnabled !== undefined && { decision_trace_enabled: req.decisionTraceEnabled }),
      ...(rate !== undefined && { decision_trace_sample_rate: rate }),
      ...(days !== undefined && { maturity_ramp_days: days }),
      ...(fraction !== undefined && { maturity_ramp_start_fraction: fraction }),
    });
    await this.snapshots.invalidate(ctx.tenantId);
    return toSettings(row);
  }

  async getWorkspaceUsage(ctx: TenantContext): Promise<WorkspaceUsage> {
    return create(WorkspaceUsageSchema, { decisionsUsed: await this.counters.decisionCounter.decisions(ctx.tenantId), decisionQuota: this.decisionQuota ?? undefined });
  }

  /**
   * Deletes configuration, customers, decisions and traces, restores a new tenant's defaults, and
   * sets the decision counter to 0. Users, keys, clients and the audit log stay; the reset itself
   * is audit-logged.
   */
  async resetWorkspace(ctx: TenantContext, req: ResetWorkspaceRequest): Promise<WorkspaceUsage> {
    if (req.confirm !== ctx.tenantId) throw invalidField("confirm", "must be this workspace's tenant id");
    await this.store.resetWorkspace(ctx.tenantId, async (t) => {
      await this.audit.record(t, ctx, {
        action: "delete",
        entityType: "workspace",
        entityId: ctx.tenantId,
        entityName: null,
        before: null,
        after: null,
        entityVersion: null,
        changes: { reason: "workspace reset" },
      });
      await this.seedTenant(t, ctx);
    });
    await this.counters.wipe.resetTenant(ctx.tenantId);
    await this.snapshots.invalidate(ctx.tenantId);
    return this.getWorkspaceUsage(ctx);
  }

  async putCustomer(ctx: TenantContext, req: PutCustomerRequest): Promise<Customer> {
    const customerId = customerIdOf(req.customerId);
    const row = await this.store.putCustomer(ctx.tenantId, customerId, req.attributes ?? {});
    await this.customers.invalidate(`${ctx.tenantId}|${customerId}`);
    return toCustomer(ctx.tenantId, row);
  }

  async getCustomer(ctx: TenantContext, req: GetCustomerRequest): Promise<Customer> {
    const row = await this.store.customer(ctx.tenantId, customerIdOf(req.customerId));
    if (!row) throw notFound("customer", req.customerId);
    return toCustomer(ctx.tenantId, row);
  }

  async listDecisionTraces(ctx: TenantContext, req: ListDecisionTracesRequest): Promise<ListDecisionTracesResponse> {
    const violations: FieldViolation[] = [];
    const { limit, offset } = limitOffsetRequest(req, 100, 50, violations);
    if (req.recommendationId && !isUuid(req.recommendationId)) violations.push({ field: "recommendationId", message: "must be a recommendation id" });
    if (violations.length) throw invalidFields(violations);
    const { rows, total } = await this.store.traces(ctx.tenantId, { customerId: req.customerId || undefined, recommendationId: req.recommendationId || undefined }, limit, offset);
    return create(ListDecisionTracesResponseSchema, { data: rows.map(toTraceSummary), pagination: { total, limit, offset } });
  }

  async getDecisionTrace(ctx: TenantContext, req: GetDecisionTraceRequest): Promise<DecisionTrace> {
    const trace = isUuid(req.id) ? await this.traces.get(ctx.tenantId, req.id) : null;
    if (!trace) throw notFound("decision trace", req.id);
    return trace;
  }
}

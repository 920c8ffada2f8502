import { create } from "@bufbuild/protobuf";
import { WorkspaceUsageSchema, type ResetWorkspaceRequest, type WorkspaceUsage } from "../../gen/decisioning/v1/configuration_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField } from "../platform/errors.js";
import type { InvalidatedCache } from "../platform/invalidated-cache.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { Counters } from "./counters.js";
import type { DecisionStore } from "./decision-store.js";

/** The workspace as a whole (spec 1, 2.16): its decision usage against the quota, and its reset. */
export class WorkspaceService {
  constructor(
    private readonly store: DecisionStore,
    private readonly counters: Pick<Counters, "decisionCounter" | "wipe">,
    private readonly snapshots: InvalidatedCache<unknown>,
    private readonly audit: AuditLog,
    private readonly seedTenant: (t: Transaction, ctx: TenantContext) => Promise<void>,
    private readonly decisionQuota: number | null,
  ) {}

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
}

import { create } from "@bufbuild/protobuf";
import { WorkspaceUsageSchema, type ResetWorkspaceRequest, type WorkspaceUsage } from "../../gen/decisioning/v1/configuration_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, unavailable } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { Counters } from "./counters.js";
import type { DecisionStore } from "./decision-store.js";

export interface WorkspaceDeps {
  store: DecisionStore;
  counters: Pick<Counters, "decisionCounter" | "wipe">;
  audit: AuditLog;
  seedTenant: (t: Transaction, ctx: TenantContext) => Promise<void>;
  /** Other domains' workspace data (alert rules), deleted in the reset's transaction through their own stores. */
  otherWorkspaceData: ReadonlyArray<(t: Transaction, tenantId: string) => Promise<void>>;
  /**
   * Makes every process forget what it keeps of the tenant (its configuration snapshot, with which
   * the replayable outcomes go, and its customers), resolving once they all have.
   */
  forgetTenantEverywhere: (tenantId: string) => Promise<unknown>;
  logger: Logger;
  decisionQuota: number | null;
}

/** The workspace as a whole (spec 1, 2.16): its decision usage against the quota, and its reset. */
export class WorkspaceService {
  constructor(private readonly deps: WorkspaceDeps) {}

  async getWorkspaceUsage(ctx: TenantContext): Promise<WorkspaceUsage> {
    const { counters, decisionQuota } = this.deps;
    return create(WorkspaceUsageSchema, { decisionsUsed: await counters.decisionCounter.decisions(ctx.tenantId), decisionQuota: decisionQuota ?? undefined });
  }

  /**
   * Deletes configuration, customers, decisions and traces, restores a new tenant's defaults, and
   * sets the decision counter to 0. Users, keys, clients and the audit log stay; the reset itself
   * is audit-logged. Every step is idempotent, so a reset that failed after its commit is finished
   * by repeating it.
   */
  async resetWorkspace(ctx: TenantContext, req: ResetWorkspaceRequest): Promise<WorkspaceUsage> {
    if (req.confirm !== ctx.tenantId) throw invalidField("confirm", "must be this workspace's tenant id");
    const { store, audit, seedTenant, otherWorkspaceData } = this.deps;
    await store.resetWorkspace(ctx.tenantId, async (t) => {
      for (const wipe of otherWorkspaceData) await wipe(t, ctx.tenantId);
      await audit.record(t, ctx, {
        action: "delete",
        entityType: "workspace",
        entityId: ctx.tenantId,
        entityName: null,
        before: null,
        after: null,
        entityVersion: null,
        changes: { reason: "workspace reset" },
      });
      await seedTenant(t, ctx);
    });
    await this.forgetThenWipe(ctx.tenantId);
    return this.getWorkspaceUsage(ctx);
  }

  /**
   * After the commit, never before: a wipe that preceded a failed commit would give the quota back
   * and keep the data. Every process first forgets the tenant's cached configuration and customers,
   * so no decision on the deleted configuration starts after the wipe and counts into the new
   * workspace's counters.
   */
  private async forgetThenWipe(tenantId: string): Promise<void> {
    const { forgetTenantEverywhere, counters, logger } = this.deps;
    await forgetTenantEverywhere(tenantId);
    try {
      await counters.wipe.resetTenant(tenantId);
    } catch (err) {
      logger.warn({ err, tenantId }, "workspace reset committed, but its counters were not wiped: the reset must be repeated");
      throw unavailable(
        "WORKSPACE_RESET_INCOMPLETE",
        "The workspace data was reset, but its counters could not be cleared: repeat the reset to finish it",
      );
    }
  }
}

import type { Sequelize } from "sequelize";
import { AiRecommendationService, ApprovalService as ApprovalServiceDesc } from "../../gen/decisioning/v1/approvals_pb.js";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import type { Logger } from "../platform/logger.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { Catalog } from "../catalog/catalog.js";
import type { PublishGate } from "../catalog/decision-flows.js";
import { requiresPublishApproval } from "../decisions/publish-approval-setting.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { RegistryMoveInTransaction } from "../models/model-promotion.js";
import { ApprovalService } from "./approval-service.js";
import { ApprovalStore } from "./approval-store.js";
import { ChangeExecutor } from "./change-executor.js";
import { RecommendationService } from "./recommendation-service.js";
import { RecommendationStore } from "./recommendation-store.js";

export interface ApprovalsOptions {
  db: Sequelize;
  audit: AuditLog;
  catalog: Pick<Catalog, "writeTargets" | "liveIds">;
  /** The registry's promote in a caller's transaction, for `algorithmModel` publish requests. */
  registryMove: RegistryMoveInTransaction;
  /** APPROVAL_MAX_AGE_HOURS. */
  maxAgeHours: number;
  logger: Logger;
}

export interface Approvals {
  services: ServiceRegistration[];
  /** What the decision flows' publish asks (createCatalog's publishGate). */
  publishGate: PublishGate;
  /** approvals-expire: hourly, and at every call of /api/v1/cron/approvals-expire. */
  jobs: ScheduledJob[];
}

/** Approvals and AI recommendations, built once at start-up (docs/approvals.md). */
export function createApprovals(o: ApprovalsOptions): Approvals {
  const recommendationStore = new RecommendationStore(o.db);
  const executor = new ChangeExecutor(o.db, o.catalog.writeTargets, recommendationStore, async (tenantId, ids) =>
    o.catalog.liveIds(tenantId, "decision_flows", ids), o.registryMove,
  );
  const approvals = new ApprovalService({
    db: o.db,
    store: new ApprovalStore(o.db),
    executor,
    audit: o.audit,
    maxAgeMs: o.maxAgeHours * 3_600_000,
    requiresPublishApproval: (tenantId, t) => requiresPublishApproval(o.db, tenantId, t),
  });
  const recommendations = new RecommendationService(o.db, recommendationStore, executor, o.audit);
  return {
    services: [
      { service: ApprovalServiceDesc, impl: approvals as unknown as Record<string, Handler> },
      { service: AiRecommendationService, impl: recommendations as unknown as Record<string, Handler> },
    ],
    publishGate: approvals.consumePublishApproval,
    jobs: [
      {
        name: "approvals-expire",
        schedule: { everyMs: 3_600_000 },
        route: "approvals-expire",
        // Spec 3.5, 4.21: a call expires what is stale at the call, even when this hour's slot ran
        // already. Expiry is one conditional UPDATE (pending and older than the cutoff), so runs that
        // overlap are harmless. The slot is the run's "now": the cutoff is APPROVAL_MAX_AGE_HOURS before it.
        routeCall: "now",
        async run(slot) {
          const expired = await approvals.expireStale(slot);
          if (expired) o.logger.info({ expired }, "approval requests expired");
        },
      },
    ],
  };
}

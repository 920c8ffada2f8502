import type { Sequelize } from "sequelize";
import { ModelRegistryService as ModelRegistryServiceDesc } from "../../gen/decisioning/v1/models_pb.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import type { AuditLog } from "../audit/audit-log.js";
import { activeFlowModelUses } from "../catalog/flow-model-usage.js";
import { countScoredDecisions } from "../decisions/scored-decisions.js";
import type { ModelPromoter, RegistryMoveInTransaction } from "./model-promotion.js";
import { ModelRegistryService } from "./model-registry-service.js";
import { ModelRegistryStore } from "./model-registry-store.js";

export interface ModelRegistryOptions {
  db: Sequelize;
  audit: AuditLog;
  /** The decisions' snapshot invalidation (decisions.configChanged). */
  configChanged(tenantId: string): void;
  minScoredDecisions: number;
}

/** The registry, built once at start-up: its routes, and the promoter experiments use. */
export function createModelRegistry(o: ModelRegistryOptions): { services: ServiceRegistration[]; promoter: ModelPromoter; moveInTransaction: RegistryMoveInTransaction } {
  const registry = new ModelRegistryService({
    store: new ModelRegistryStore(o.db),
    audit: o.audit,
    activeFlowModelUses: (tenantId, t) => activeFlowModelUses(o.db, tenantId, t),
    countScoredDecisions: (tenantId, modelId, atMost, t) => countScoredDecisions(o.db, tenantId, modelId, atMost, t),
    configChanged: o.configChanged,
    minScoredDecisions: o.minScoredDecisions,
  });
  return {
    services: [
      {
        service: ModelRegistryServiceDesc,
        impl: {
          promoteAlgorithmModel: (ctx, req) => registry.promoteAlgorithmModel(ctx, req),
          resolveModelLifecycle: (ctx, req) => registry.resolveModelLifecycle(ctx, req),
        },
      },
    ],
    promoter: registry,
    moveInTransaction: (ctx, req, t) => registry.promoteAlgorithmModel(ctx, req, t),
  };
}

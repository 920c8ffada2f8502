import type { Sequelize } from "sequelize";
import {
  ExperimentService as ExperimentServiceDesc,
  type ExperimentResults,
  type GetExperimentResultsRequest,
} from "../../gen/decisioning/v1/experiments_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { ExperimentSplit } from "../core/index.js";
import type { ModelPromoter } from "../models/model-promotion.js";
import type { TenantContext } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import { AutoPromotion, autoPromotionJob } from "./auto-promotion.js";
import { toSplit } from "./experiment-mapper.js";
import { ExperimentService, type ExperimentReferences } from "./experiment-service.js";
import { ExperimentStore } from "./experiment-store.js";

export interface ExperimentsOptions {
  db: Sequelize;
  audit: AuditLog;
  logger: Logger;
  references: ExperimentReferences;
  promoter: ModelPromoter;
  /** After every committed write (Recommend's snapshot holds the active experiments). */
  changed: (tenantId: string) => void;
}

export interface Experiments {
  services: ServiceRegistration[];
  /** The scheduler's jobs of this domain (src/main.ts registers them). */
  jobs: ScheduledJob[];
  /** Evaluates auto-promotion now, across tenants: the job's body, callable on demand. */
  autoPromotion: AutoPromotion;
  /** The results of spec 4.12 (`GET /experiments/{id}/results`), for the reports' experiment_results source. */
  results(ctx: TenantContext, req: GetExperimentResultsRequest): Promise<ExperimentResults>;
  /** The read model Recommend's snapshot loads: active experiments, oldest first. */
  activeExperiments(tenantId: string): Promise<ExperimentSplit[]>;
}

/** Experiments (spec 2.15, 3.4, 4.12), built once at start-up. */
export function createExperiments(o: ExperimentsOptions): Experiments {
  const store = new ExperimentStore(o.db);
  const service = new ExperimentService({ store, audit: o.audit, references: o.references, changed: o.changed });
  const autoPromotion = new AutoPromotion({ store, service, promoter: o.promoter, logger: o.logger });
  return {
    services: [
      {
        service: ExperimentServiceDesc,
        impl: {
          listExperiments: (ctx, req) => service.listExperiments(ctx, req),
          createExperiment: (ctx, req) => service.createExperiment(ctx, req),
          getExperiment: (ctx, req) => service.getExperiment(ctx, req),
          updateExperiment: (ctx, req) => service.updateExperiment(ctx, req),
          deleteExperiment: (ctx, req) => service.deleteExperiment(ctx, req),
          getExperimentResults: (ctx, req) => service.getExperimentResults(ctx, req),
        },
      },
    ],
    jobs: [autoPromotionJob(autoPromotion)],
    autoPromotion,
    results: (ctx, req) => service.getExperimentResults(ctx, req),
    activeExperiments: async (tenantId) => (await store.active(tenantId)).map(toSplit),
  };
}

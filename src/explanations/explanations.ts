import type { Sequelize } from "sequelize";
import { DecisionExplanationService } from "../../gen/decisioning/v1/explanations_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { LlmConfig } from "../config.js";
import type { Logger } from "../platform/logger.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import { createDeterministicWriter } from "./deterministic-writer.js";
import { ExplanationAccess, type ExplanationSources } from "./explanation-access.js";
import { ExplanationAudit } from "./explanation-audit.js";
import { createLlmWriter } from "./llm-writer.js";
import { NarrativeService } from "./narrative-service.js";
import { createReportNarrativeWriter, type ReportNarrativeWriter } from "./report-narrative-writer.js";
import { NarrativeStore } from "./narrative-store.js";
import { ShapService, type ShapPool } from "./shap-service.js";

export interface ExplanationsOptions {
  db: Sequelize;
  audit: AuditLog;
  /** The decisions domain's read model. */
  sources: ExplanationSources;
  /** null: narratives come from the deterministic writer. */
  llm: LlmConfig | null;
  /** The scoring worker pool, which also computes large SHAP tasks; null computes them inline. */
  pool: ShapPool | null;
  logger: Logger;
}

/** Decision explanations (spec 4.11): SHAP values and narratives, built once at start-up. */
export interface Explanations {
  services: ServiceRegistration[];
  /** The same writers for reports: their narratives from section data and the template's prompt. */
  reportNarratives: ReportNarrativeWriter;
}

export function createExplanations(o: ExplanationsOptions): Explanations {
  const access = new ExplanationAccess(o.sources);
  const audit = new ExplanationAudit(o.db, o.audit);
  const shap = new ShapService(access, audit, o.pool);
  const narratives = new NarrativeService({
    db: o.db,
    access,
    audit,
    store: new NarrativeStore(o.db),
    writer: o.llm ? createLlmWriter(o.llm) : createDeterministicWriter(),
    logger: o.logger,
  });
  return {
    services: [
      {
        service: DecisionExplanationService,
        impl: {
          explainDecisionShap: (ctx, req) => shap.explainDecisionShap(ctx, req),
          narrateDecision: (ctx, req) => narratives.narrateDecision(ctx, req),
        },
      },
    ],
    reportNarratives: createReportNarrativeWriter(o.llm, o.logger),
  };
}

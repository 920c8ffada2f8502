import type { ExplainDecisionShapRequest, ShapExplanation } from "../../gen/decisioning/v1/explanations_pb.js";
import { chooseScoringPath, explainScoreTask, type DecisionShapOutcome, type ScoreTask } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { badRequest } from "../platform/errors.js";
import type { ExplanationAccess } from "./explanation-access.js";
import type { ExplanationAudit } from "./explanation-audit.js";
import { toShapExplanation, traceJson } from "./explanation-mapper.js";

/**
 * `POST /decisions/{id}/shap` (spec 4.11): exact TreeSHAP values of the decision's gradient-boosted
 * scoring step, computed from the trace's replay record against the configuration version it ran
 * with (ADR 4), so a decision made before a model changed is explained by the model it used.
 */
export class ShapService {
  constructor(
    private readonly access: ExplanationAccess,
    private readonly audit: ExplanationAudit,
    private readonly pool: ShapPool | null,
  ) {}

  async explainDecisionShap(ctx: TenantContext, req: ExplainDecisionShapRequest): Promise<ShapExplanation> {
    await this.access.requireOptIn(ctx);
    const { trace, scoreTask } = await this.access.trace(ctx, req.id);
    if (!scoreTask) {
      // Stored as its explanation before replay records: no model version to explain against.
      const modelType = (traceJson(trace).scoringResults as Array<{ modelType?: unknown }> | undefined)?.[0]?.modelType;
      if (modelType !== undefined && modelType !== "gradient_boosted") {
        throw badRequest("MODEL_NOT_GRADIENT_BOOSTED", `the decision was scored by a ${String(modelType)} model; SHAP values need a gradient_boosted model`);
      }
      throw badRequest(
        "TRACE_NOT_REPLAYABLE",
        `decision trace ${trace.id} was recorded before replay records and keeps no model version to compute SHAP values from`,
      );
    }
    const outcome = await this.explain(scoreTask);
    if (outcome.problem) throw badRequest(outcome.problem.reason, outcome.problem.message);
    const { shap } = outcome;
    await this.audit.record(ctx, trace.id, {
      explanation: "shap",
      modelId: shap.modelId,
      modelKey: shap.modelKey,
      candidates: shap.candidates.length,
      additivityResidual: shap.additivityResidual,
      inputsHash: trace.inputsHash,
    });
    return toShapExplanation(trace, shap);
  }

  /**
   * TreeSHAP costs about leaves × depth² per tree and candidate, several hundred times a scoring
   * walk (100 trees of depth 6 over 200 candidates: most of a CPU second), so all but small tasks
   * run in the worker pool, off the event loop. A pool failure falls back to the inline path.
   */
  private async explain(task: ScoreTask): Promise<DecisionShapOutcome> {
    if (this.pool && chooseScoringPath(task, SHAP_POOL_MIN_TREE_WALKS) === "pool") {
      return this.pool.explainShap(task).catch(() => explainScoreTask(task));
    }
    return explainScoreTask(task);
  }
}

/** Trees × candidates from which SHAP values are computed in the worker pool (about 50 ms inline). */
export const SHAP_POOL_MIN_TREE_WALKS = 2_000;

/** The part of the scoring pool SHAP uses (src/platform/scoring-pool.ts). */
export interface ShapPool {
  explainShap(task: ScoreTask): Promise<DecisionShapOutcome>;
}

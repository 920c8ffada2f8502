/**
 * Stage 3, scoring: one serialisable task in, one score per candidate out. This is the function the
 * Piscina worker runs, so the task carries everything (candidates, attributes, the primary and
 * shadow model configurations, counts, CLV, seed) and nothing in it is a class, a Map or a
 * function. Models compile once per task.
 *
 * Fail-soft (spec 2.16): a model that is missing, fails to compile or throws or yields a non-finite
 * number on a candidate gives that candidate FALLBACK_SCORE with `degraded: true` and a `reason`,
 * and the decision goes on. Shadow models are scored into `shadowScores` and never ranked; a
 * failing shadow is reported in `shadowErrors` instead.
 */
import type { Attributes } from "../attributes.js";
import { compileModel } from "./compile-model.js";
import type { ClvInput } from "./impact.js";
import type { ModelConfig, ModelType } from "./models.js";
import type { EvidenceCounts } from "./evidence-counts.js";
import { NO_EXPLANATIONS, type Explanation, type ModelScore, type PropensitySource, type Scorer, type ScoringContext, type ScoringOffer } from "./scorer.js";

export interface ScoreTask {
  candidates: ScoringOffer[];
  customer: Attributes;
  context: Attributes;
  /** At least the primary and shadow models, keyed by model key. */
  models: Record<string, ModelConfig>;
  modelKey: string;
  shadowModelKeys: string[];
  evidence: EvidenceCounts;
  /** DecisionInput.bucketsOverCap. */
  bucketsOverCap?: string[];
  clv: ClvInput | null;
  seed: string;
  /** Build `explanations[]`; without it they are empty, which saves work on unsampled decisions. */
  explain: boolean;
}

export interface CandidateScore {
  offerId: string;
  score: number;
  propensity: number;
  propensitySource: PropensitySource;
  modelId: string;
  modelKey: string;
  modelType: ModelType | "unavailable";
  explanations: readonly Explanation[];
  shadowScores?: Record<string, number>;
  shadowErrors?: Record<string, string>;
  degraded?: true;
  reason?: string;
}

/** Score of a candidate whose model is unavailable or failing (spec 2.16). */
export const FALLBACK_SCORE = 0.5;

interface ResolvedModel {
  key: string;
  id: string;
  type: ModelType | "unavailable";
  scorer?: Scorer;
  failure?: string;
}

export function scoreCandidates(task: ScoreTask): CandidateScore[] {
  const primary = resolveModel(task, task.modelKey);
  const shadows = task.shadowModelKeys.filter((key) => key !== task.modelKey).map((key) => resolveModel(task, key));
  // One context per task, pointed at each candidate in turn: scorers read it synchronously and keep
  // none of it, and a context and a bag per candidate were most of what scoring allocated.
  const bag = { customer: task.customer, context: task.context, offer: {} as Attributes };
  const context: ScoringContext = {
    offer: task.candidates[0],
    bag,
    evidence: task.evidence,
    bucketsOverCap: task.bucketsOverCap,
    clv: task.clv,
    seed: task.seed,
    explain: task.explain,
  };
  const shadowContext: ScoringContext = { ...context, explain: false };
  return task.candidates.map((offer) => {
    context.offer = shadowContext.offer = offer;
    bag.offer = offer as unknown as Attributes;
    const result = runModel(primary, context);
    const failed = "failure" in result;
    const scored: ModelScore = failed
      ? {
          score: FALLBACK_SCORE,
          propensity: FALLBACK_SCORE,
          propensitySource: primary.type === "adaptive" || primary.type === "formula" ? "cold_start" : "model",
          explanations: NO_EXPLANATIONS,
        }
      : result;
    // Members written out, not spread from the result: spreading into a literal cost more than the model.
    const score: CandidateScore = {
      offerId: offer.id,
      modelId: primary.id,
      modelKey: primary.key,
      modelType: primary.type,
      score: scored.score,
      propensity: scored.propensity,
      propensitySource: scored.propensitySource,
      explanations: scored.explanations,
    };
    if (failed) Object.assign(score, { degraded: true, reason: result.failure });
    for (const shadow of shadows) {
      const shadowResult = runModel(shadow, shadowContext);
      if ("failure" in shadowResult) (score.shadowErrors ??= {})[shadow.key] = shadowResult.failure;
      else (score.shadowScores ??= {})[shadow.key] = shadowResult.score;
    }
    return score;
  });
}

/**
 * Compiled models by configuration object. In-process, a task's model configurations are the
 * snapshot's own objects, the same on every request until the configuration changes, so a 100-tree
 * ensemble compiles once per snapshot instead of once per decision; a new snapshot brings new
 * objects and the old entries are collected with it. (A worker receives copies and compiles each.)
 */
const compiledModels = new WeakMap<ModelConfig, ReturnType<typeof compileModel>>();

function compileOnce(config: ModelConfig): ReturnType<typeof compileModel> {
  let compiled = compiledModels.get(config);
  if (!compiled) {
    compiled = compileModel(config);
    compiledModels.set(config, compiled);
  }
  return compiled;
}

function resolveModel(task: ScoreTask, key: string): ResolvedModel {
  const config = Object.hasOwn(task.models, key) ? task.models[key] : undefined;
  if (!config) return { key, id: key, type: "unavailable", failure: `model ${key} is not available` };
  const compiled = compileOnce(config);
  return compiled.scorer
    ? { key, id: config.id, type: config.type, scorer: compiled.scorer }
    : { key, id: config.id, type: config.type, failure: `model ${key} is invalid: ${compiled.errors.join("; ")}` };
}

function runModel(model: ResolvedModel, context: ScoringContext): ModelScore | { failure: string } {
  if (!model.scorer) return { failure: model.failure ?? `model ${model.key} is not available` };
  try {
    const result = model.scorer.score(context);
    if (!Number.isFinite(result.score) || !Number.isFinite(result.propensity)) {
      return { failure: `model ${model.key} produced a non-finite score for offer ${context.offer.id}` };
    }
    return result;
  } catch (err) {
    return { failure: `model ${model.key} failed on offer ${context.offer.id}: ${err instanceof Error ? err.message : String(err)}` };
  }
}

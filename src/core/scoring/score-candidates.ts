/**
 * Stage 3, scoring: one serialisable task in, a score per candidate out, as columns (ScoreColumns).
 * This is the function the Piscina worker runs, so the task carries everything (candidates,
 * attributes, the primary and shadow model configurations, counts, CLV, seed) and nothing in it is
 * a class, a Map or a function. Models compile once per configuration object (compileOnce).
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
import { NO_EXPLANATIONS, scoreSlot, type Explanation, type ModelScore, type PropensitySource, type Scorer, type ScoringContext, type ScoringOffer } from "./scorer.js";

export interface ScoreTask {
  /** Read-only: the list may be shared by every decision over the same candidates (decide.ts). */
  candidates: readonly ScoringOffer[];
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

/**
 * A task's scores, column by column: index i of each column is `task.candidates[i]`'s. The model's
 * names are the primary model's, the same for every candidate; `extras[i]` holds what candidate i
 * has beyond the columns (explanations, a degraded score's reason, shadow scores), when it has
 * anything. Columns, not a CandidateScore per candidate: those objects, with their boxed numbers,
 * were a third of what a decision allocated, and ranking reads only the three columns.
 */
export interface ScoreColumns {
  modelId: string;
  modelKey: string;
  modelType: ModelType | "unavailable";
  score: number[];
  propensity: number[];
  propensitySource: PropensitySource[];
  extras: Record<number, CandidateExtras>;
}

export type CandidateExtras = Partial<Pick<CandidateScore, "explanations" | "shadowScores" | "shadowErrors" | "degraded" | "reason">>;

/** Score of a candidate whose model is unavailable or failing (spec 2.16). */
export const FALLBACK_SCORE = 0.5;

interface ResolvedModel {
  key: string;
  id: string;
  type: ModelType | "unavailable";
  scorer?: Scorer;
  failure?: string;
}

export function scoreCandidates(task: ScoreTask): ScoreColumns {
  const primary = resolveModel(task, task.modelKey);
  const shadows = task.shadowModelKeys.filter((key) => key !== task.modelKey).map((key) => resolveModel(task, key));
  // One context per task, pointed at each candidate in turn: scorers read it synchronously and keep
  // none of it, and a context and a bag per candidate were most of what scoring allocated.
  const bag = { customer: task.customer, context: task.context, offer: {} as Attributes };
  const context: ScoringContext = {
    offer: task.candidates[0],
    candidates: task.candidates,
    index: 0,
    bag,
    evidence: task.evidence,
    bucketsOverCap: task.bucketsOverCap,
    clv: task.clv,
    seed: task.seed,
    explain: task.explain,
  };
  const shadowContext: ScoringContext = { ...context, explain: false };
  const n = task.candidates.length;
  const columns = scoreColumns({ modelId: primary.id, modelKey: primary.key, modelType: primary.type }, n, {});
  const failedSource: PropensitySource = primary.type === "adaptive" || primary.type === "formula" ? "cold_start" : "model";
  const out = scoreSlot();
  for (let i = 0; i < n; i++) {
    const offer = task.candidates[i];
    context.offer = shadowContext.offer = offer;
    context.index = shadowContext.index = i;
    bag.offer = offer as unknown as Attributes;
    const failure = runModel(primary, context, out);
    let extras: CandidateExtras | undefined;
    if (failure !== undefined) {
      columns.score[i] = columns.propensity[i] = FALLBACK_SCORE;
      columns.propensitySource[i] = failedSource;
      extras = { degraded: true, reason: failure };
    } else {
      columns.score[i] = out.score;
      columns.propensity[i] = out.propensity;
      columns.propensitySource[i] = out.propensitySource;
      if (out.explanations.length) extras = { explanations: out.explanations };
    }
    for (const shadow of shadows) {
      const shadowFailure = runModel(shadow, shadowContext, out);
      extras ??= {};
      if (shadowFailure !== undefined) (extras.shadowErrors ??= {})[shadow.key] = shadowFailure;
      else (extras.shadowScores ??= {})[shadow.key] = out.score;
    }
    if (extras) columns.extras[i] = extras;
  }
  return columns;
}

/** Columns for `n` candidates scored by `model`, to be filled in candidate order. */
export function scoreColumns(model: Pick<ScoreColumns, "modelId" | "modelKey" | "modelType">, n: number, extras: ScoreColumns["extras"]): ScoreColumns {
  return {
    modelId: model.modelId,
    modelKey: model.modelKey,
    modelType: model.modelType,
    score: new Array<number>(n),
    propensity: new Array<number>(n),
    propensitySource: new Array<PropensitySource>(n),
    extras,
  };
}

/** The scores as one CandidateScore per candidate (spec 2.16's scoring rows), in candidate order. */
export function candidateScores(columns: ScoreColumns, candidates: readonly ScoringOffer[]): CandidateScore[] {
  const out = new Array<CandidateScore>(candidates.length);
  for (let i = 0; i < candidates.length; i++) {
    const extras = columns.extras[i];
    const score: CandidateScore = {
      offerId: candidates[i].id,
      modelId: columns.modelId,
      modelKey: columns.modelKey,
      modelType: columns.modelType,
      score: columns.score[i],
      propensity: columns.propensity[i],
      propensitySource: columns.propensitySource[i],
      explanations: extras?.explanations ?? NO_EXPLANATIONS,
    };
    if (extras?.degraded) Object.assign(score, { degraded: true, reason: extras.reason });
    if (extras?.shadowScores) score.shadowScores = extras.shadowScores;
    if (extras?.shadowErrors) score.shadowErrors = extras.shadowErrors;
    out[i] = score;
  }
  return out;
}

/** Whether any candidate was scored by the fallback (spec 2.16 `degradedScoring`). */
export function anyDegraded(columns: ScoreColumns): boolean {
  for (const i in columns.extras) if (columns.extras[i].degraded) return true;
  return false;
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

/** Scores `context.offer` into `out`; a failure is returned as its reason, and `out` is then not to be read. */
function runModel(model: ResolvedModel, context: ScoringContext, out: ModelScore): string | undefined {
  if (!model.scorer) return model.failure ?? `model ${model.key} is not available`;
  try {
    model.scorer.score(context, out);
    if (!Number.isFinite(out.score) || !Number.isFinite(out.propensity)) {
      return `model ${model.key} produced a non-finite score for offer ${context.offer.id}`;
    }
    return undefined;
  } catch (err) {
    return `model ${model.key} failed on offer ${context.offer.id}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * Exact SHAP values for the scoring step of one decision (spec 4.11): the primary model of its
 * score task, which must be gradient-boosted, explained for every candidate it scored, in raw-margin
 * space (before the sigmoid of logistic objectives, where contributions add up). The task is the
 * one the decision scored (a replay of its trace record rebuilds it byte for byte), so the feature
 * values are the ones the model read then.
 *
 * Each candidate carries its additivity residual |baseValue + Σ contributions − margin|, where the
 * margin comes from the same compiled walk that scores decisions: a check of the explanation
 * against the model, not against itself.
 */
import type { Attributes } from "../attributes.js";
import { compileEnsemble } from "../scoring/gradient-boosted.js";
import { sigmoid } from "../scoring/link.js";
import type { ScoreTask } from "../scoring/score-candidates.js";
import type { ScoringContext } from "../scoring/scorer.js";
import { treeShapExplainer } from "./tree-shap.js";

export interface FeatureContribution {
  /** The model's feature name. */
  feature: string;
  /** The attribute path it reads (after the model's featureMap). */
  attribute: string;
  /** The value the model read; null when missing (the trees took their `missing` branch). */
  value: number | null;
  contribution: number;
}

export interface CandidateShap {
  offerId: string;
  /** The model's output: sigmoid(margin) for logistic objectives, the margin otherwise. */
  score: number;
  margin: number;
  /** Largest |contribution| first. */
  contributions: FeatureContribution[];
  additivityResidual: number;
}

export interface DecisionShap {
  modelId: string;
  modelKey: string;
  objective: string;
  /** E[margin] with no feature known; the same for every candidate. */
  baseValue: number;
  /** Some split had no cover, and its branches were weighed equally (tree-shap.ts). */
  uniformWeights: boolean;
  /** Best score first, as the trace's scoringResults. */
  candidates: CandidateShap[];
  /** The largest residual over the candidates. */
  additivityResidual: number;
}

export type ShapProblemReason = "MODEL_NOT_GRADIENT_BOOSTED" | "MODEL_HAS_NO_TREES" | "MODEL_INVALID" | "MODEL_UNAVAILABLE";

export type DecisionShapOutcome = { shap: DecisionShap; problem?: undefined } | { problem: { reason: ShapProblemReason; message: string }; shap?: undefined };

export function explainScoreTask(task: ScoreTask): DecisionShapOutcome {
  const model = Object.hasOwn(task.models, task.modelKey) ? task.models[task.modelKey] : undefined;
  if (!model) return problem("MODEL_UNAVAILABLE", `the decision's model ${task.modelKey} was not available when it was scored`);
  if (model.type !== "gradient_boosted") {
    return problem("MODEL_NOT_GRADIENT_BOOSTED", `the decision was scored by model ${model.key} of type ${model.type}; SHAP values need a gradient_boosted model`);
  }
  if (!Array.isArray(model.trees) || model.trees.length === 0) return problem("MODEL_HAS_NO_TREES", `model ${model.key} has no trained trees`);
  const compiled = compileEnsemble(model);
  if (!compiled.ensemble) return problem("MODEL_INVALID", `model ${model.key} is invalid: ${compiled.errors.join("; ")}`);
  const { ensemble } = compiled;
  const explainer = treeShapExplainer(ensemble);
  const attributes = ensemble.features.map((name) => (model.featureMap && Object.hasOwn(model.featureMap, name) ? model.featureMap[name] : name));
  const candidates = task.candidates.map((offer, index): CandidateShap => {
    const context: ScoringContext = {
      offer,
      candidates: task.candidates,
      index,
      bag: { customer: task.customer, context: task.context, offer: offer as unknown as Attributes },
      evidence: task.evidence,
      clv: task.clv,
      seed: task.seed,
      explain: false,
    };
    // readFeatures reuses its buffer: copy before the next candidate overwrites it.
    const x = Float64Array.from(ensemble.readFeatures(context));
    const margin = ensemble.margin(x);
    const phi = explainer.explain(x);
    const sum = phi.reduce((a, b) => a + b, 0);
    const contributions = ensemble.features
      .map((feature, i) => ({ feature, attribute: attributes[i], value: Number.isNaN(x[i]) ? null : x[i], contribution: phi[i] }))
      .sort((a, b) => Math.abs(b.contribution) - Math.abs(a.contribution));
    return {
      offerId: offer.id,
      score: ensemble.logistic ? sigmoid(margin) : margin,
      margin,
      contributions,
      additivityResidual: Math.abs(explainer.baseValue + sum - margin),
    };
  });
  candidates.sort((a, b) => b.score - a.score || (a.offerId < b.offerId ? -1 : a.offerId > b.offerId ? 1 : 0));
  return {
    shap: {
      modelId: model.id,
      modelKey: model.key,
      objective: model.objective ?? "binary:logistic",
      baseValue: explainer.baseValue,
      uniformWeights: explainer.uniformWeights,
      candidates,
      additivityResidual: candidates.reduce((max, c) => Math.max(max, c.additivityResidual), 0),
    },
  };
}

function problem(reason: ShapProblemReason, message: string): DecisionShapOutcome {
  return { problem: { reason, message } };
}

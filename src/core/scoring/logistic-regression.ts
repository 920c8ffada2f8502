/**
 * Imported logistic regression: p = sigmoid(intercept + Σ coefficientᵢ · featureᵢ) over named
 * features (features.ts). A missing feature counts as 0, the usual convention for sparse inputs.
 * Explanations are the intercept and each coefficient × value, in margin (log-odds) space; they
 * sum to logit(p).
 */
import { featureReader, featureVector } from "./features.js";
import { sigmoid } from "./link.js";
import type { LogisticRegressionModel } from "./models.js";
import { NO_EXPLANATIONS, numberProblem, setScore, type Compiled, type ModelScore, type ScoringContext } from "./scorer.js";

export function compileLogisticRegression(model: LogisticRegressionModel): Compiled {
  const coefficients: unknown = model.coefficients;
  const errors = numberProblem(model.intercept, "model.intercept");
  if (coefficients === null || typeof coefficients !== "object" || Array.isArray(coefficients)) {
    errors.push("model.coefficients: must be an object of feature name to weight");
  } else {
    for (const [name, weight] of Object.entries(coefficients)) errors.push(...numberProblem(weight, `model.coefficients.${name}`));
  }
  if (errors.length > 0) return { errors };
  const fields = Object.keys(model.coefficients);
  const weights = fields.map((field) => model.coefficients[field]);
  const readFeatures = featureVector(fields.map((field) => featureReader(field, model.featureMap)));
  return {
    scorer: {
      score(context: ScoringContext, out: ModelScore): void {
        const x = readFeatures(context);
        const contributions = weights.map((weight, i) => weight * (Number.isNaN(x[i]) ? 0 : x[i]));
        const margin = contributions.reduce((sum, c) => sum + c, model.intercept);
        const score = sigmoid(margin);
        const explanations = context.explain
          ? [{ field: "(intercept)", contribution: model.intercept }, ...fields.map((field, i) => ({ field, contribution: contributions[i] }))]
          : NO_EXPLANATIONS;
        setScore(out, score, score, "model", explanations);
      },
    },
  };
}

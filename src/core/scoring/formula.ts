/**
 * The formula model: a weighted mean of normalised terms, then the CLV tilt (spec 4.14).
 *
 *   base  = Σ wᵢ·termᵢ / Σ wᵢ          over the terms
 *     priority      = offer.priority / 100
 *     businessValue = offer.businessValue / 100
 *     propensity    = posterior mean of the offer's adaptive counts (see adaptive.ts)
 *     impact        = offerImpact(offer) − 1            (0 … 1, see impact.ts)
 *     relevance     = 1 when productType matches the relevance attribute, 0 when it differs,
 *                     0.5 when either is unknown
 *   score = base · impact^(clvWeight · clvScore / 100)   skipped without a CLV record
 *
 * Explanations are the weighted terms (they sum to `base`) and `clv`, the tilt's addition.
 */
import { attributeReader, isMissing } from "../attributes.js";
import { posteriorFor, posteriorSlot, validateAdaptiveSettings } from "./adaptive.js";
import { betaMean } from "./beta.js";
import { clvTilt, DEFAULT_REVENUE_SCALE, offerImpact } from "./impact.js";
import type { FormulaModel, FormulaWeights } from "./models.js";
import { NO_EXPLANATIONS, numberProblem, setScore, type Compiled, type ModelScore, type ScoringContext } from "./scorer.js";

export const DEFAULT_FORMULA_WEIGHTS: FormulaWeights = {
  priority: 0.2,
  businessValue: 0.2,
  propensity: 0.4,
  impact: 0.1,
  relevance: 0.1,
};

export const DEFAULT_RELEVANCE_ATTRIBUTE = "preferredProductType";

export function compileFormula(model: FormulaModel): Compiled {
  const weights = { ...DEFAULT_FORMULA_WEIGHTS, ...model.weights };
  const errors = [
    ...Object.entries(weights).flatMap(([k, w]) => numberProblem(w, `model.weights.${k}`, (n) => n >= 0, "a number >= 0")),
    ...(model.clvWeight === undefined ? [] : numberProblem(model.clvWeight, "model.clvWeight")),
    ...(model.revenueScale === undefined
      ? []
      : numberProblem(model.revenueScale, "model.revenueScale", (n) => n > 0, "a positive number")),
    ...validateAdaptiveSettings(model.propensity ?? {}, "model.propensity"),
  ];
  const totalWeight = Object.values(weights).reduce((a, b) => a + b, 0);
  if (errors.length === 0 && !(totalWeight > 0)) errors.push("model.weights: at least one weight must be positive");
  if (errors.length > 0) return { errors };
  const revenueScale = model.revenueScale ?? DEFAULT_REVENUE_SCALE;
  const relevanceWanted = attributeReader(model.relevanceAttribute ?? DEFAULT_RELEVANCE_ATTRIBUTE);
  const propensitySettings = model.propensity ?? {};
  const slot = posteriorSlot();
  return {
    scorer: {
      score(context: ScoringContext, out: ModelScore): void {
        const posterior = posteriorFor(propensitySettings, context, slot);
        const propensity = betaMean(posterior.alpha, posterior.beta);
        const impact = offerImpact(context.offer, revenueScale);
        const terms: FormulaWeights = {
          priority: context.offer.priority / 100,
          businessValue: context.offer.businessValue / 100,
          propensity,
          impact: impact - 1,
          relevance: productRelevance(context.offer.productType, relevanceWanted(context.bag)),
        };
        const contributions = (Object.keys(terms) as Array<keyof FormulaWeights>).map((field) => ({
          field,
          contribution: (weights[field] * terms[field]) / totalWeight,
        }));
        const base = contributions.reduce((sum, c) => sum + c.contribution, 0);
        const score = clvTilt(base, impact, model.clvWeight ?? 0, context.clv);
        setScore(out, score, propensity, posterior.source, context.explain ? [...contributions, { field: "clv", contribution: score - base }] : NO_EXPLANATIONS);
      },
    },
  };
}

/** Case-insensitive match of the offer's productType against a string or a list of strings. */
export function productRelevance(productType: string | null | undefined, wanted: unknown): number {
  if (!productType || isMissing(wanted)) return 0.5;
  const values = Array.isArray(wanted) ? wanted : [wanted];
  const target = productType.toLowerCase();
  return values.some((v) => String(v).toLowerCase() === target) ? 1 : 0;
}

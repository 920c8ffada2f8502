/**
 * The shape every model compiles to. Compiling validates a configuration once per task; scoring a
 * candidate may still throw (a NaN feature, a broken count), and score-candidates.ts turns any
 * throw into the degraded fallback, so a model module only has to be honest about failure.
 */
import type { AttributeBag } from "../attributes.js";
import type { EvidenceCounts } from "./evidence-counts.js";
import type { ClvInput } from "./impact.js";

/** The offer fields models read; also the `offer` root of the feature bag. */
export interface ScoringOffer {
  id: string;
  categoryId?: string | null;
  priority: number;
  businessValue: number;
  margin?: number | null;
  revenueValue?: number | null;
  productType?: string | null;
  tags?: string[];
}

/** Caller-supplied Beta-Bernoulli evidence for one offer in one context bucket. */
export interface AdaptiveCount {
  successes: number;
  trials: number;
}

/** Where a propensity came from (spec 2.16). */
export type PropensitySource = "model" | "adaptation" | "cold_start";

/** One term's share of a score (spec 2.16 `explanations[]`). */
export interface Explanation {
  field: string;
  contribution: number;
}

/**
 * One scoring task's view of a candidate. scoreCandidates points one context at each candidate in
 * turn: `offer`, `index` and `bag.offer` change, while the candidate list, the customer and the
 * request context stay fixed for the context's life, so a scorer may compute request-level values
 * once per context object.
 */
export interface ScoringContext {
  offer: ScoringOffer;
  /** The task's candidates, `offer` being `candidates[index]`: a scorer may keep work per list (adaptive.ts). */
  candidates: readonly ScoringOffer[];
  index: number;
  /** customer, context and offer roots. */
  bag: AttributeBag;
  /** Keys are adaptiveCountKey(offerId, bucket). */
  evidence: EvidenceCounts;
  /** Context buckets that count in the all-contexts bucket instead (DecisionInput.bucketsOverCap). */
  bucketsOverCap?: readonly string[];
  clv: ClvInput | null;
  /** The request seed; models that sample derive their own stream from it. */
  seed: string;
  explain: boolean;
}

export interface ModelScore {
  score: number;
  propensity: number;
  propensitySource: PropensitySource;
  explanations: readonly Explanation[];
}

/** The explanations of a score nobody asked to explain: one list for every candidate of every decision. */
export const NO_EXPLANATIONS: readonly Explanation[] = Object.freeze([]);

export interface Scorer {
  /**
   * Scores `context.offer` into `out`, every member. The caller passes one result object for all
   * of a task's candidates and reads it before the next call: a result allocated per candidate,
   * its numbers boxed, was half of what scoring allocated.
   */
  score(context: ScoringContext, out: ModelScore): void;
}

/** Writes a score into a scorer's `out`. */
export function setScore(out: ModelScore, score: number, propensity: number, propensitySource: PropensitySource, explanations: readonly Explanation[]): void {
  out.score = score;
  out.propensity = propensity;
  out.propensitySource = propensitySource;
  out.explanations = explanations;
}

/** A result object for Scorer.score; its numbers start as doubles, so that writing one never changes its shape. */
export function scoreSlot(): ModelScore {
  return { score: 0.5, propensity: 0.5, propensitySource: "model", explanations: NO_EXPLANATIONS };
}

export type Compiled = { scorer: Scorer; errors?: undefined } | { errors: string[]; scorer?: undefined };

/** `<path>: must be a finite number` when `value` is not one; shared by the model validators. */
export function numberProblem(value: unknown, path: string, check: (n: number) => boolean = () => true, rule = "a finite number"): string[] {
  return typeof value === "number" && Number.isFinite(value) && check(value) ? [] : [`${path}: must be ${rule}`];
}

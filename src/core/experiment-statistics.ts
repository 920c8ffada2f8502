/**
 * Experiment results (spec 2.15): per-variant rates with Wilson intervals, uplift against the
 * holdout with a pooled two-proportion z-test, the sample size a test needs, and a sample-ratio-
 * mismatch check. Pure functions of counts, so the figures can be checked against an independent
 * reference (test/reference/experiment_statistics.py) and used by auto-promotion alike.
 * docs/experiments.md gives every formula.
 */
import { chiSquareSurvival, normalQuantile, normalSurvival } from "./distributions.js";

export interface VariantCounts {
  samples: number;
  conversions: number;
}

export interface Interval {
  lower: number;
  upper: number;
}

/** Conversions per sample; 0 for a variant without samples. */
export function conversionRate(c: VariantCounts): number {
  return c.samples > 0 ? c.conversions / c.samples : 0;
}

/** The two-sided z for a confidence level: 1.959963984540054 at 0.95. */
export function twoSidedZ(confidenceLevel: number): number {
  return normalQuantile(1 - (1 - confidenceLevel) / 2);
}

/**
 * The Wilson score interval, which unlike the normal approximation stays inside [0, 1] and behaves
 * at rates near 0 or 1 and at small samples. Without samples it is the uninformative [0, 1].
 */
export function wilsonInterval(c: VariantCounts, confidenceLevel: number): Interval {
  const n = c.samples;
  if (n === 0) return { lower: 0, upper: 1 };
  const z = twoSidedZ(confidenceLevel);
  const p = c.conversions / n;
  const z2n = (z * z) / n;
  const center = (p + z2n / 2) / (1 + z2n);
  const half = (z / (1 + z2n)) * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n));
  return { lower: Math.max(0, center - half), upper: Math.min(1, center + half) };
}

export interface ZTest {
  zScore: number;
  /** Two-tailed. */
  pValue: number;
}

/**
 * The pooled two-proportion z-test of `treatment` against `control`: z = (p₁ − p₀) / √(p̂(1 − p̂)(1/n₁ + 1/n₀))
 * with p̂ the pooled rate, and the two-tailed p = 2·P(Z > |z|). Null when it is undefined: a side
 * without samples, or a pooled rate of 0 or 1 (no variance).
 */
export function pooledZTest(treatment: VariantCounts, control: VariantCounts): ZTest | null {
  const n1 = treatment.samples;
  const n0 = control.samples;
  if (n1 === 0 || n0 === 0) return null;
  const pooled = (treatment.conversions + control.conversions) / (n1 + n0);
  const variance = pooled * (1 - pooled) * (1 / n1 + 1 / n0);
  if (!(variance > 0)) return null;
  const zScore = (conversionRate(treatment) - conversionRate(control)) / Math.sqrt(variance);
  return { zScore, pValue: 2 * normalSurvival(Math.abs(zScore)) };
}

export interface Uplift {
  /** Treatment rate minus control rate. */
  absolute: number;
  /** The absolute uplift divided by the control rate; null when that rate is 0. */
  relative: number | null;
}

/** Null when the control has no samples: there is no rate to compare with. */
export function uplift(treatment: VariantCounts, control: VariantCounts): Uplift | null {
  if (control.samples === 0) return null;
  const base = conversionRate(control);
  const absolute = conversionRate(treatment) - base;
  return { absolute, relative: base > 0 ? absolute / base : null };
}

export interface SampleSizePlan {
  /** Conversion rate of the control the effect is measured from. */
  baselineRate: number;
  /** Relative minimum detectable effect: the treatment rate is baselineRate · (1 + mde). */
  minimumDetectableEffect: number;
  /** Two-sided significance level. */
  alpha: number;
  power: number;
}

/**
 * Samples per variant for a two-sided pooled two-proportion z-test to detect the planned effect
 * (Fleiss): n = (z₁₋α/₂·√(2p̄(1−p̄)) + z_power·√(p₁(1−p₁) + p₂(1−p₂)))² / (p₂ − p₁)², rounded up, with
 * p₂ = p₁(1 + mde) and p̄ their mean. Null when no finite answer exists (a baseline of 0, or a
 * treatment rate outside (0, 1]).
 */
export function requiredSampleSize(plan: SampleSizePlan): number | null {
  const p1 = plan.baselineRate;
  const p2 = p1 * (1 + plan.minimumDetectableEffect);
  if (!(p1 > 0 && p1 < 1) || !(p2 > 0 && p2 <= 1) || p2 === p1) return null;
  const zAlpha = normalQuantile(1 - plan.alpha / 2);
  const zPower = normalQuantile(plan.power);
  const mean = (p1 + p2) / 2;
  const numerator = zAlpha * Math.sqrt(2 * mean * (1 - mean)) + zPower * Math.sqrt(p1 * (1 - p1) + p2 * (1 - p2));
  return Math.ceil((numerator * numerator) / ((p2 - p1) * (p2 - p1)));
}

export interface SampleRatioCheck {
  chiSquare: number;
  pValue: number;
  /** p < SRM_ALPHA: the observed split is very unlikely under the configured one. */
  mismatch: boolean;
}

/** The conventional SRM threshold: strict, because a mismatch means the data cannot be trusted. */
export const SRM_ALPHA = 0.001;

/**
 * Pearson's chi-square of observed sample counts against expected shares (any positive scale),
 * with k − 1 degrees of freedom over the k variants whose expected share is positive. A variant
 * configured at 0% is left out: it has no expectation to miss. Without samples there is no evidence
 * of a mismatch.
 */
export function sampleRatioMismatch(observed: readonly number[], expectedShares: readonly number[]): SampleRatioCheck {
  const kept = observed.map((o, i) => ({ o, share: expectedShares[i] })).filter((v) => v.share > 0);
  const total = kept.reduce((n, v) => n + v.o, 0);
  const shareTotal = kept.reduce((n, v) => n + v.share, 0);
  if (total === 0 || kept.length < 2) return { chiSquare: 0, pValue: 1, mismatch: false };
  const chiSquare = kept.reduce((sum, v) => {
    const expected = (total * v.share) / shareTotal;
    return sum + ((v.o - expected) * (v.o - expected)) / expected;
  }, 0);
  const pValue = chiSquareSurvival(chiSquare, kept.length - 1);
  return { chiSquare, pValue, mismatch: pValue < SRM_ALPHA };
}

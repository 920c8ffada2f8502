/**
 * An experiment's results (spec 2.15) from its variants' counts: what `GET /experiments/{id}/results`
 * answers and what auto-promotion decides on. Pure, over experiment-statistics.ts.
 */
import {
  CHAMPION_VARIANT,
  expectedShares,
  HOLDOUT_VARIANT,
  variantModelId,
  variantNames,
  type ExperimentSplit,
} from "./experiment-assignment.js";
import {
  conversionRate,
  pooledZTest,
  requiredSampleSize,
  sampleRatioMismatch,
  uplift,
  wilsonInterval,
  type SampleRatioCheck,
  type VariantCounts,
} from "./experiment-statistics.js";

export interface ResultsParameters {
  confidenceLevel: number;
  /** Of requiredSampleSize. */
  alpha: number;
  power: number;
  /** Relative minimum detectable effect of requiredSampleSize. */
  minimumDetectableEffect: number;
}

export const DEFAULT_RESULTS_PARAMETERS: ResultsParameters = { confidenceLevel: 0.95, alpha: 0.05, power: 0.8, minimumDetectableEffect: 0.1 };

/** A treatment against the holdout; a figure is null where it is undefined. */
export interface HoldoutComparison {
  absoluteUplift: number | null;
  relativeUplift: number | null;
  zScore: number | null;
  pValue: number | null;
  significant: boolean;
}

export interface VariantResult extends VariantCounts {
  variant: string;
  modelId: string | null;
  rate: number;
  wilsonLower: number;
  wilsonUpper: number;
  /** Absent for the holdout itself. */
  comparison?: HoldoutComparison;
}

export interface ExperimentAnalysis {
  variants: VariantResult[];
  requiredSampleSize: number | null;
  srm: SampleRatioCheck;
  parameters: ResultsParameters & { baselineRate: number | null };
}

const NONE: VariantCounts = { samples: 0, conversions: 0 };

/**
 * Every configured variant in order (holdout, champion, challengers), then any variant that has
 * samples but is no longer configured (a challenger removed mid-experiment: its customers were
 * still exposed). The SRM test covers the configured variants.
 */
export function analyzeExperiment(split: ExperimentSplit, counts: ReadonlyMap<string, VariantCounts>, parameters: ResultsParameters): ExperimentAnalysis {
  const configured = variantNames(split);
  const names = [...configured, ...[...counts.keys()].filter((v) => !configured.includes(v)).sort()];
  const holdout = counts.get(HOLDOUT_VARIANT) ?? NONE;
  const variants = names.map((variant): VariantResult => {
    const c = counts.get(variant) ?? NONE;
    const interval = wilsonInterval(c, parameters.confidenceLevel);
    const result: VariantResult = {
      variant,
      modelId: variant === HOLDOUT_VARIANT ? null : variantModelId(split, variant),
      samples: c.samples,
      conversions: c.conversions,
      rate: conversionRate(c),
      wilsonLower: interval.lower,
      wilsonUpper: interval.upper,
    };
    if (variant !== HOLDOUT_VARIANT) result.comparison = compare(c, holdout, parameters.confidenceLevel);
    return result;
  });
  const baselineRate = baseline(holdout, counts.get(CHAMPION_VARIANT) ?? NONE);
  return {
    variants,
    requiredSampleSize: baselineRate === null ? null : requiredSampleSize({ ...parameters, baselineRate }),
    srm: sampleRatioMismatch(
      configured.map((v) => (counts.get(v) ?? NONE).samples),
      expectedShares(split),
    ),
    parameters: { ...parameters, baselineRate },
  };
}

/** `treatment` against `control`: uplift and the pooled z-test, significant at p < 1 − confidenceLevel. */
export function compare(treatment: VariantCounts, control: VariantCounts, confidenceLevel: number): HoldoutComparison {
  const u = uplift(treatment, control);
  const test = pooledZTest(treatment, control);
  return {
    absoluteUplift: u?.absolute ?? null,
    relativeUplift: u?.relative ?? null,
    zScore: test?.zScore ?? null,
    pValue: test?.pValue ?? null,
    significant: test !== null && test.pValue < 1 - confidenceLevel,
  };
}

/** The rate sample sizes are planned from: the holdout's, else the champion's; null unless in (0, 1). */
function baseline(holdout: VariantCounts, champion: VariantCounts): number | null {
  for (const c of [holdout, champion]) {
    const rate = conversionRate(c);
    if (c.samples > 0 && rate > 0 && rate < 1) return rate;
  }
  return null;
}

export interface PromotionVerdict {
  variant: string;
  modelId: string;
  /** The challenger against the champion. */
  comparison: HoldoutComparison;
}

/**
 * The challenger auto-promotion should promote, if any (spec 3.4): one whose relative uplift over
 * the champion is at least `threshold` with a significant pooled z-test at `confidenceLevel`; of
 * several, the one with the highest relative uplift (ties: configured order).
 */
export function promotionWinner(
  split: ExperimentSplit,
  counts: ReadonlyMap<string, VariantCounts>,
  threshold: number,
  confidenceLevel: number,
): PromotionVerdict | null {
  const champion = counts.get(CHAMPION_VARIANT) ?? NONE;
  let best: PromotionVerdict | null = null;
  for (const variant of variantNames(split).slice(2)) {
    const comparison = compare(counts.get(variant) ?? NONE, champion, confidenceLevel);
    if (!comparison.significant || comparison.relativeUplift === null || comparison.relativeUplift < threshold) continue;
    if (!best || comparison.relativeUplift > best.comparison.relativeUplift!) best = { variant, modelId: variantModelId(split, variant)!, comparison };
  }
  return best;
}

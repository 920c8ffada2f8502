/**
 * Which variant of an experiment a customer gets (spec 2.15), and which experiment covers a
 * decision. Pure: the service keeps the chosen variant for 30 days (so a split change does not move
 * customers) and calls `assignVariant` only for customers without a kept one.
 *
 * The bucket is 32-bit FNV-1a of the UTF-8 bytes of `<experimentKey>:<customerId>`, modulo
 * BUCKETS. The holdout takes the first holdoutPercent of all buckets; the rest of the population is
 * split between the champion and the challengers in their configured order, by their shares of 100.
 */
import { fnv1a32 } from "./hash.js";

export const HOLDOUT_VARIANT = "__holdout__";
export const CHAMPION_VARIANT = "__champion__";
/** Basis points: percentages with two decimals split exactly. */
export const BUCKETS = 10_000;

export interface ChallengerArm {
  modelId: string;
  /** The variant name when given; else the variant is named by modelId. */
  key?: string | null;
  /** Share of the non-holdout population, 0-100. */
  trafficPct: number;
}

/** What assignment and coverage need of an active experiment. */
export interface ExperimentSplit {
  id: string;
  key: string;
  /** Null: the experiment covers the flows that score with its champion model. */
  flowId: string | null;
  championModelId: string;
  championPct: number;
  challengers: ChallengerArm[];
  /** Share of the whole population held out, 0-100. */
  holdoutPercent: number;
}

export function challengerVariant(challenger: ChallengerArm): string {
  return challenger.key || challenger.modelId;
}

/** The variants in result order: holdout, champion, challengers. */
export function variantNames(split: ExperimentSplit): string[] {
  return [HOLDOUT_VARIANT, CHAMPION_VARIANT, ...split.challengers.map(challengerVariant)];
}

/** The model a variant scores with; null for the holdout (the baseline) or a variant the experiment no longer has. */
export function variantModelId(split: ExperimentSplit, variant: string): string | null {
  if (variant === CHAMPION_VARIANT) return split.championModelId;
  return split.challengers.find((c) => challengerVariant(c) === variant)?.modelId ?? null;
}

/** The configured share of the whole population per variant of `variantNames`, in percent. */
export function expectedShares(split: ExperimentSplit): number[] {
  const treated = (100 - split.holdoutPercent) / 100;
  return [split.holdoutPercent, split.championPct * treated, ...split.challengers.map((c) => c.trafficPct * treated)];
}

export function variantBucket(experimentKey: string, customerId: string): number {
  return fnv1a32(`${experimentKey}:${customerId}`) % BUCKETS;
}

/** The variant the hash gives a customer under the experiment's current split. */
export function assignVariant(split: ExperimentSplit, customerId: string): string {
  const bucket = variantBucket(split.key, customerId);
  const holdoutBuckets = Math.round(split.holdoutPercent * (BUCKETS / 100));
  if (bucket < holdoutBuckets) return HOLDOUT_VARIANT;
  // Position within the treated population, in percent of it.
  const position = ((bucket - holdoutBuckets) * 100) / (BUCKETS - holdoutBuckets);
  let upTo = split.championPct;
  if (position < upTo) return CHAMPION_VARIANT;
  for (const challenger of split.challengers) {
    upTo += challenger.trafficPct;
    if (position < upTo) return challengerVariant(challenger);
  }
  // Shares sum to 100, so only rounding can land here: the last arm with traffic takes it.
  const last = [...split.challengers].reverse().find((c) => c.trafficPct > 0);
  return last ? challengerVariant(last) : CHAMPION_VARIANT;
}

/**
 * The active experiment that covers a decision on the flow `flowId`: one whose flowId names the
 * flow, or, without a flowId, one whose champion is the model the flow scores with
 * (`servingModelId`: the family champion of the model its score node names, model-lineup.ts). The
 * oldest such experiment wins (the list is in creation order), so a second experiment on the same
 * flow waits until the first one stops.
 */
export function coveringExperiment<T extends ExperimentSplit>(experiments: readonly T[], flowId: string, servingModelId: string | undefined): T | null {
  return experiments.find((e) => (e.flowId ? e.flowId === flowId : e.championModelId === servingModelId)) ?? null;
}

/**
 * Adaptive evidence as a decision reads it: `counts[i]` is the evidence of `keys[i]` (keys are
 * adaptiveCountKey(offerId, bucket)), null where nothing was counted. The service reads the keys
 * of evidenceKeys() in that order and keeps the counts in it, so a decision builds no 200-key
 * dictionary on the way in and its trace records the counts as they are. Plain arrays, so a task
 * crosses to a scoring worker as cheaply as it can.
 */
import type { AdaptiveCount } from "./scorer.js";

export interface EvidenceCounts {
  keys: readonly string[];
  counts: ReadonlyArray<AdaptiveCount | null>;
}

export const NO_EVIDENCE: EvidenceCounts = Object.freeze({ keys: Object.freeze([]), counts: Object.freeze([]) });

/** Position by key, per key list: the service's lists are cached per snapshot, so each is indexed once. */
const indexes = new WeakMap<readonly string[], ReadonlyMap<string, number>>();
/** The last list looked up: every candidate found anew asks about the same one. */
let lastKeys: readonly string[] | null = null;
let lastIndex: ReadonlyMap<string, number> = new Map();

function indexOf(keys: readonly string[]): ReadonlyMap<string, number> {
  if (keys === lastKeys) return lastIndex;
  let index = indexes.get(keys);
  if (!index) {
    const built = new Map<string, number>();
    keys.forEach((key, i) => built.set(key, i));
    indexes.set(keys, (index = built));
  }
  lastKeys = keys;
  return (lastIndex = index);
}

/** Where `key` sits in the evidence's key list; -1 when it was not read. */
export function positionOf(evidence: EvidenceCounts, key: string): number {
  return indexOf(evidence.keys).get(key) ?? -1;
}

/** The counted evidence as a map keyed by adaptiveCountKey, as a trace shows it (spec 2.16 `inputs.adaptiveCounts`). */
export function evidenceRecord(evidence: EvidenceCounts): Record<string, AdaptiveCount> {
  const record: Record<string, AdaptiveCount> = {};
  evidence.keys.forEach((key, i) => {
    const count = evidence.counts[i];
    if (count) record[key] = count;
  });
  return record;
}

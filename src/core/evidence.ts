/**
 * Which adaptive evidence a decision reads: one key per (active candidate, context bucket of each
 * adaptive or formula model the score node uses). The service reads exactly these keys before a
 * decision, and a trace stores their values in this order, so a replay can rebuild the map.
 */
import type { AttributeBag } from "./attributes.js";
import type { DecisionFlow } from "./flow.js";
import { requestFlow, resolveRequestScope } from "./request-scope.js";
import { ALL_CONTEXTS_BUCKET, adaptiveCountKey, bucketSpace, contextBucket, countingBucket } from "./scoring/adaptive.js";
import type { ModelConfig } from "./scoring/models.js";
import type { DecisionSnapshot } from "./snapshot.js";
import type { DecisionInput } from "./decide.js";
import { scoringModelKeys } from "./model-lineup.js";

/** The adaptive settings a model counts evidence with, or null when it reads none. */
export function adaptiveSettings(model: ModelConfig | undefined): { bucketBy?: string[] } | null {
  if (model?.type === "adaptive") return model;
  if (model?.type === "formula") return model.propensity ?? {};
  return null;
}

/**
 * The bucket a returned offer's impressions and outcomes count in: the primary model's, or the
 * all-contexts bucket for models without one, so evidence gathers whatever scores today.
 */
export function evidenceBucket(model: ModelConfig | undefined, bag: AttributeBag, bucketsOverCap?: readonly string[]): string {
  const settings = adaptiveSettings(model);
  return settings ? countingBucket(settings.bucketBy, bag, bucketsOverCap) : ALL_CONTEXTS_BUCKET;
}

/** The adaptive settings of the primary and shadow models a flow scores with. */
function countedSettings(snapshot: DecisionSnapshot, flow: DecisionFlow, modelKeyOverride: string | undefined): Array<{ bucketBy?: string[] }> {
  const { modelKey, shadowModelKeys } = scoringModelKeys(snapshot, flow, modelKeyOverride);
  return [modelKey, ...shadowModelKeys].flatMap((key) => adaptiveSettings(snapshot.models.get(key)) ?? []);
}

/**
 * The context buckets a decision would count evidence in, one per `bucketBy` list of its primary
 * and shadow models (none for models without one), each with its space (bucketSpace). The service
 * admits them against its cap on buckets per space before reading evidence; those it refuses go
 * back in as `bucketsOverCap`.
 */
export function contextBuckets(snapshot: DecisionSnapshot, input: Omit<DecisionInput, "clv" | "seed">): Array<{ space: string; bucket: string }> {
  const bag = { customer: input.customer, context: input.context };
  const bySpace = new Map<string, string>();
  for (const { bucketBy } of countedSettings(snapshot, requestFlow(snapshot, input), input.modelKey)) {
    if (bucketBy?.length) bySpace.set(bucketSpace(bucketBy), contextBucket(bucketBy, bag));
  }
  return [...bySpace].map(([space, bucket]) => ({ space, bucket }));
}

/** Key lists by snapshot, then by flow, model and buckets: a decision builds none of its 200 keys anew. */
const keyLists = new WeakMap<DecisionSnapshot, Map<string, readonly string[]>>();
const MAX_KEY_LISTS_PER_SNAPSHOT = 1000;

/** Evidence keys of every active candidate for the primary and shadow models, without repeats. */
export function evidenceKeys(snapshot: DecisionSnapshot, input: Omit<DecisionInput, "clv" | "seed">): readonly string[] {
  const scope = resolveRequestScope(snapshot, input);
  const bag = { customer: input.customer, context: input.context };
  const buckets = countedSettings(snapshot, scope.flow, input.modelKey).map(({ bucketBy }) => countingBucket(bucketBy, bag, input.bucketsOverCap));
  const id = [scope.flow.id, ...buckets].join("\u0000");
  let lists = keyLists.get(snapshot);
  if (!lists) keyLists.set(snapshot, (lists = new Map()));
  const known = lists.get(id);
  if (known) return known;
  const keys = new Set<string>();
  for (const bucket of buckets) for (const offer of scope.candidates) if (offer.status === "active") keys.add(adaptiveCountKey(offer.id, bucket));
  if (lists.size >= MAX_KEY_LISTS_PER_SNAPSHOT) lists.clear();
  // Read-only by type, not frozen: Node 20's V8 walks a frozen array's for-of through the generic
  // iterator, ten times slower and allocating a result per element (docs/performance.md).
  const list: readonly string[] = [...keys];
  lists.set(id, list);
  return list;
}

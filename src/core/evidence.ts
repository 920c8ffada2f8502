/**
 * Which adaptive evidence a decision reads: one key per (active candidate, context bucket of each
 * adaptive or formula model the score node uses). The service reads exactly these keys before a
 * decision, and a trace stores their values in this order, so a replay can rebuild the map.
 */
import type { AttributeBag } from "./attributes.js";
import { resolveRequestScope } from "./request-scope.js";
import { ALL_CONTEXTS_BUCKET, adaptiveCountKey, contextBucket } from "./scoring/adaptive.js";
import type { ModelConfig } from "./scoring/models.js";
import type { DecisionSnapshot } from "./snapshot.js";
import { scoringModelKeys, type DecisionInput } from "./decide.js";

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
export function evidenceBucket(model: ModelConfig | undefined, bag: AttributeBag): string {
  const settings = adaptiveSettings(model);
  return settings ? contextBucket(settings.bucketBy, bag) : ALL_CONTEXTS_BUCKET;
}

/** Evidence keys of every active candidate for the primary and shadow models, without repeats. */
export function evidenceKeys(snapshot: DecisionSnapshot, input: Omit<DecisionInput, "clv" | "seed">): string[] {
  const scope = resolveRequestScope(snapshot, input);
  const { modelKey, shadowModelKeys } = scoringModelKeys(snapshot, scope.flow, input.modelKey);
  const bag = { customer: input.customer, context: input.context };
  const keys = new Set<string>();
  for (const key of [modelKey, ...shadowModelKeys]) {
    const settings = adaptiveSettings(snapshot.models.get(key));
    if (!settings) continue;
    const bucket = contextBucket(settings.bucketBy, bag);
    for (const offer of scope.candidates) if (offer.status === "active") keys.add(adaptiveCountKey(offer.id, bucket));
  }
  return [...keys];
}

/**
 * Frequency caps: at most `maxImpressions` impressions to one customer within a fixed window of
 * `windowSeconds`, counted per offer, per category or per channel. Without `scopeId` a cap applies
 * to every offer (or category, or channel) separately; with it, only to that one.
 */
import type { Offer } from "./catalog.js";
import { frequencyCounterKey, windowTtlSeconds, type CounterCheck } from "./counters.js";

export interface FrequencyCapPolicy {
  id: string;
  name?: string;
  type?: "frequency_cap";
  scope: "offer" | "category" | "channel";
  scopeId?: string;
  maxImpressions: number;
  windowSeconds: number;
}

/** The counter this cap reads and reserves for `offer`, or null when the cap does not concern it. */
export function frequencyCapCheck(
  policy: FrequencyCapPolicy,
  offer: Offer,
  customerId: string,
  channelId: string | null,
  nowMs: number,
): CounterCheck | null {
  const scopeValue = policy.scope === "offer" ? offer.id : policy.scope === "category" ? offer.categoryId : channelId;
  return scopeValue ? scopedCapCheck(policy, scopeValue, customerId, nowMs) : null;
}

/**
 * The counter this cap reads and reserves for one offer, category or channel id, or null when the
 * cap names another. A channel cap needs no offer: channel coupling asks it per channel.
 */
export function scopedCapCheck(policy: FrequencyCapPolicy, scopeValue: string, customerId: string, nowMs: number): CounterCheck | null {
  if (policy.scopeId !== undefined && policy.scopeId !== scopeValue) return null;
  return {
    key: frequencyCounterKey(customerId, policy.scope, scopeValue, policy.windowSeconds, nowMs),
    limit: policy.maxImpressions,
    increment: 1,
    ttlSeconds: windowTtlSeconds(policy.windowSeconds, nowMs),
    policyId: policy.id,
    kind: "frequency_cap",
  };
}

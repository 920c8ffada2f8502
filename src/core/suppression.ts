/**
 * Suppression: after a negative outcome (for example `dismiss`) the same offer rests for
 * `windowSeconds`. The caller passes the customer's recent outcomes; the core only compares times.
 */
import type { Offer } from "./catalog.js";
import type { OfferScope } from "./offer-scope.js";
import { parseInstant } from "./time.js";

export interface SuppressionPolicy {
  id: string;
  name?: string;
  type: "suppression";
  afterOutcomes: string[];
  windowSeconds: number;
  appliesTo?: OfferScope;
}

/** An outcome the customer recorded on an offer, as read by the service (spec 2.5 `outcome`). */
export interface RecentOutcome {
  offerId: string;
  outcome: string;
  at: string;
}

/**
 * Whether a decision over `config` reads the customer's recent outcomes: only suppression policies
 * do, so without one the service need not fetch them.
 */
export function readsRecentOutcomes(config: { contactPolicies: readonly { type?: string }[] }): boolean {
  return config.contactPolicies.some((p) => p.type === "suppression");
}

/** The most recent outcome that suppresses `offer` now, or null. Scope (`appliesTo`) is the caller's check. */
export function suppressingOutcome(
  policy: SuppressionPolicy,
  offer: Offer,
  outcomes: readonly RecentOutcome[],
  nowMs: number,
): RecentOutcome | null {
  const since = nowMs - policy.windowSeconds * 1000;
  let latest: { outcome: RecentOutcome; at: number } | null = null;
  for (const outcome of outcomes) {
    if (outcome.offerId !== offer.id || !policy.afterOutcomes.includes(outcome.outcome)) continue;
    const at = parseInstant(outcome.at);
    if (at === null || at < since || at > nowMs) continue;
    if (!latest || at > latest.at) latest = { outcome, at };
  }
  return latest?.outcome ?? null;
}

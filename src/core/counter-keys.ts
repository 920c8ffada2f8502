/**
 * The counters a decision will read, for the service to fetch (one MGET under the tenant prefix)
 * before calling `decide`, and each candidate's checks, which the service passes back in
 * `DecisionInput.counterChecks` so they are built once per decision, not twice. Keys of active
 * candidate offers only: the others never reach the contact-policy stage. A decision without a
 * channel also reads the channel caps and budgets of the channels its candidates' creatives could
 * go out on. Absent keys read as 0.
 */
import type { Offer } from "./catalog.js";
import { outgoingChannels } from "./channel-coupling.js";
import { channelLimitChecks } from "./channel-limits.js";
import { counterChecks } from "./contact-policy.js";
import type { CounterCheck } from "./counters.js";
import { resolveRequestScope, type RequestScopeInput } from "./request-scope.js";
import type { DecisionSnapshot } from "./snapshot.js";

export interface CounterPlan {
  keys: string[];
  checks: ReadonlyMap<Offer, readonly CounterCheck[]>;
}

export function counterPlan(snapshot: DecisionSnapshot, request: RequestScopeInput): CounterPlan {
  // Counters belong to frequency caps and budgets: a tenant with neither (suppression policies hold
  // none) has no offer to walk.
  if (snapshot.budgets.length === 0 && snapshot.contactPolicies.every((policy) => policy.type === "suppression")) {
    return { keys: [], checks: new Map() };
  }
  const scope = resolveRequestScope(snapshot, request);
  const keys = new Set<string>();
  const checks = new Map<Offer, readonly CounterCheck[]>();
  // A decision without a channel asks the channel limits of every channel its creatives could go
  // out on (channel-gate.ts); with a channel, or without channel limits, there is nothing to collect.
  const limits = scope.channel === null ? snapshot.channelLimits : null;
  const channels = limits ? new Set<string>() : null;
  for (const offer of scope.candidates) {
    if (offer.status !== "active") continue;
    const creatives = channels && snapshot.creativesByOffer.get(offer.id);
    if (creatives) outgoingChannels(creatives, scope.slots, snapshot.placementsById, channels!);
    const offerChecks = counterChecks(offer, snapshot, request.customerId, scope.channel?.id ?? null, scope.nowMs);
    if (offerChecks.length === 0) continue; // built again at no cost: most tenants' offers have none
    checks.set(offer, offerChecks);
    for (const check of offerChecks) keys.add(check.key);
  }
  if (limits) {
    for (const channelId of channels!) {
      for (const check of channelLimitChecks(limits, request.customerId, channelId, scope.nowMs)) keys.add(check.key);
    }
  }
  return { keys: [...keys], checks };
}

/**
 * The counters a decision will read, for the service to fetch (one MGET under the tenant prefix)
 * before calling `decide`. Keys of active candidate offers only: the others never reach the
 * contact-policy stage. Absent keys read as 0.
 */
import { counterChecks } from "./contact-policy.js";
import { resolveRequestScope, type RequestScopeInput } from "./request-scope.js";
import type { DecisionSnapshot } from "./snapshot.js";

export function counterKeys(snapshot: DecisionSnapshot, request: RequestScopeInput): string[] {
  const scope = resolveRequestScope(snapshot, request);
  const keys = new Set<string>();
  for (const offer of scope.candidates) {
    if (offer.status !== "active") continue;
    for (const check of counterChecks(offer, snapshot, request.customerId, scope.channel?.id ?? null, scope.nowMs)) keys.add(check.key);
  }
  return [...keys];
}

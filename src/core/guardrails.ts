/**
 * Guardrails: tenant-wide exclusion rules over customer attributes ("never offer credit to minors").
 * A guardrail excludes an offer in its scope when its condition holds. When the condition lacks an
 * attribute, `onMissing: "block"` fails closed and excludes; the default `skip` lets the offer through
 * and records a warning in the row's reason.
 */
import type { AttributeBag } from "./attributes.js";
import type { Offer } from "./catalog.js";
import { matchCondition, type Condition, type OnMissing } from "./conditions.js";
import { appliesToOffer, type OfferScope } from "./offer-scope.js";

export interface GuardrailRule {
  id: string;
  name?: string;
  condition: Condition;
  action: "exclude";
  appliesTo?: OfferScope;
  onMissing?: OnMissing;
}

export interface GuardrailVerdict {
  excluded: boolean;
  reason: string;
}

/** The guardrail's verdict on `offer`, or null when the offer is outside its scope. */
export function guardrailVerdict(rule: GuardrailRule, offer: Offer, bag: AttributeBag, nowMs: number): GuardrailVerdict | null {
  if (!appliesToOffer(rule.appliesTo, offer)) return null;
  const label = `guardrail ${rule.name ?? rule.id}`;
  const match = matchCondition(rule.condition, bag, nowMs);
  if (match.value === null) {
    return rule.onMissing === "block"
      ? { excluded: true, reason: `${label} excluded: attribute ${match.attribute} is missing (onMissing=block)` }
      : { excluded: false, reason: `${label} skipped: attribute ${match.attribute} is missing` };
  }
  return match.value ? { excluded: true, reason: `${label} matched` } : { excluded: false, reason: `${label} not matched` };
}

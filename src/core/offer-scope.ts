/**
 * Which offers a rule applies to (gates, guardrails): an absent or empty list means no restriction
 * on that axis; when both lists are given an offer must match both.
 */
import type { Offer } from "./catalog.js";

export interface OfferScope {
  offerIds?: string[];
  categoryIds?: string[];
}

export function appliesToOffer(scope: OfferScope | undefined, offer: Offer): boolean {
  if (!scope) return true;
  if (scope.offerIds && scope.offerIds.length > 0 && !scope.offerIds.includes(offer.id)) return false;
  if (scope.categoryIds && scope.categoryIds.length > 0 && !scope.categoryIds.includes(offer.categoryId ?? "")) return false;
  return true;
}

/**
 * Cross-offer constraints on one response, applied greedily in rank order across all placements:
 * `mutual_exclusion` keeps at most one of its offers, `max_per_category` at most `max` offers of a
 * category. A higher-ranked offer always wins; the loser is cut at stage `rank`.
 */
export type CrossOfferConstraint =
  | { id?: string; type: "mutual_exclusion"; offerIds: string[] }
  | { id?: string; type: "max_per_category"; categoryId: string; max: number };

export interface ConstrainedOffer {
  offerId: string;
  categoryId: string | null;
}

/** Why `candidate` may not join `selected`, or null when every constraint allows it. */
export function constraintConflict(
  constraints: readonly CrossOfferConstraint[],
  selected: readonly ConstrainedOffer[],
  candidate: ConstrainedOffer,
): string | null {
  for (const constraint of constraints) {
    if (constraint.type === "mutual_exclusion") {
      if (!constraint.offerIds.includes(candidate.offerId)) continue;
      const rival = selected.find((s) => s.offerId !== candidate.offerId && constraint.offerIds.includes(s.offerId));
      if (rival) return `mutually exclusive with ${rival.offerId}`;
    } else if (candidate.categoryId === constraint.categoryId) {
      const count = selected.filter((s) => s.categoryId === constraint.categoryId).length;
      if (count >= constraint.max) return `category ${constraint.categoryId} already has ${constraint.max} offer(s)`;
    }
  }
  return null;
}

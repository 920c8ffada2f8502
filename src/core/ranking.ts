/**
 * Stage 4, ranking: order the scored candidates and fill the request's slots.
 *
 * Order: live mandatory offers first (mandatory, `mandatoryExpiresAt` in the future, not
 * emergency-excluded — emergency exclusion already removed them earlier), then by rank score,
 * ties broken by priority and then offer id so the order is total and replayable. The rank score
 * is the ranking profile's weighted mean of
 *
 *   score (model score) · priority/100 · businessValue/100 · propensity
 *
 * tilted by CLV as in spec 4.14 with the profile's `clv` weight (impact.ts). The default profile
 * ranks by model score alone.
 *
 * Filling: each slot (placement) in request order takes the best `count` candidates that fit it
 * (channel-coupling.ts), each offer at most once across slots, subject to the cross-offer
 * constraints. Everything eligible but not taken is cut at stage `rank` and kept, in order, as the
 * fallback list. `selectOffers` is a pure function of the ordered pool, so when the service cannot
 * reserve an offer's counters it calls it again with that offer excluded; every offer before the
 * refused one keeps its place (the greedy fill never looks back).
 */
import type { Offer } from "./catalog.js";
import type { CreativeChoice, Slot, SlotOptions } from "./channel-coupling.js";
import { constraintConflict, type CrossOfferConstraint } from "./constraints.js";
import type { Reservation } from "./counters.js";
import type { Rejection } from "./rejections.js";
import { clvTilt, offerImpact, type ClvInput } from "./scoring/impact.js";
import type { CandidateScore } from "./scoring/score-candidates.js";
import type { PropensitySource } from "./scoring/scorer.js";
import { parseInstant } from "./time.js";

export interface RankingWeights {
  score: number;
  priority: number;
  businessValue: number;
  propensity: number;
  clv: number;
}

export const DEFAULT_RANKING_WEIGHTS: RankingWeights = { score: 1, priority: 0, businessValue: 0, propensity: 0, clv: 0 };

export interface RankingProfile {
  id: string;
  name?: string;
  weights: Partial<RankingWeights>;
  /** The profile used when a flow's rank node names none. */
  isDefault?: boolean;
}

/** Offers per slot when neither the request nor the flow says (RecommendRequest.limit's default). */
export const DEFAULT_COUNT = 3;

export interface SelectionPlan {
  slots: Slot[];
  count: number;
  constraints: CrossOfferConstraint[];
}

/** A candidate that passed every stage, in ranking order (`position` 0 is best). */
export interface RankedCandidate {
  position: number;
  offerId: string;
  offerName: string;
  categoryId: string | null;
  mandatory: boolean;
  score: number;
  rankScore: number;
  propensity: number;
  propensitySource: PropensitySource;
  options: SlotOptions;
  reservations: Reservation[];
}

/** A returned offer: rank from 1 across the whole response, with the chosen creative. */
export interface RankedOffer extends RankedCandidate, CreativeChoice {
  rank: number;
}

export interface RankInput {
  offer: Offer;
  options: SlotOptions;
  reservations: Reservation[];
  score: CandidateScore;
}

export interface SelectionOutput {
  offers: RankedOffer[];
  fallbacks: RankedCandidate[];
  rejections: Rejection[];
}

/** The profile's weights over the defaults: the named one, else the tenant default, else built-in. */
export function resolveRankingWeights(profiles: readonly RankingProfile[], profileId?: string): RankingWeights {
  const profile = profileId ? profiles.find((p) => p.id === profileId) : profiles.find((p) => p.isDefault);
  return { ...DEFAULT_RANKING_WEIGHTS, ...profile?.weights };
}

export function rankScore(weights: RankingWeights, offer: Offer, score: CandidateScore, clv: ClvInput | null): number {
  // Written out term by term rather than over an array of pairs: it runs for every candidate.
  const total = weights.score + weights.priority + weights.businessValue + weights.propensity;
  const weighted =
    weights.score * score.score +
    weights.priority * (offer.priority / 100) +
    weights.businessValue * (offer.businessValue / 100) +
    weights.propensity * score.propensity;
  const base = total > 0 ? weighted / total : score.score;
  return clvTilt(base, offerImpact(offer), weights.clv, clv);
}

export function orderCandidates(inputs: readonly RankInput[], weights: RankingWeights, clv: ClvInput | null, nowMs: number): RankedCandidate[] {
  const rows = inputs.map(({ offer, options, reservations, score }) => ({
    priority: offer.priority,
    candidate: {
      position: 0,
      offerId: offer.id,
      offerName: offer.name,
      categoryId: offer.categoryId ?? null,
      mandatory: isLiveMandatory(offer, nowMs),
      score: score.score,
      rankScore: rankScore(weights, offer, score, clv),
      propensity: score.propensity,
      propensitySource: score.propensitySource,
      options,
      reservations,
    },
  }));
  rows.sort(
    (a, b) =>
      Number(b.candidate.mandatory) - Number(a.candidate.mandatory) ||
      b.candidate.rankScore - a.candidate.rankScore ||
      b.priority - a.priority ||
      (a.candidate.offerId < b.candidate.offerId ? -1 : a.candidate.offerId > b.candidate.offerId ? 1 : 0),
  );
  // The candidates are this call's own objects: number them in place rather than copy each one.
  return rows.map(({ candidate }, position) => {
    candidate.position = position;
    return candidate;
  });
}

/** Fills the plan's slots from the ordered pool, leaving out `excluded` offers (refused reservations). */
export function selectOffers(pool: readonly RankedCandidate[], plan: SelectionPlan, excluded: ReadonlySet<string> = new Set(), explain = true): SelectionOutput {
  const picks: Array<{ candidate: RankedCandidate; choice: CreativeChoice }> = [];
  const used = new Set<string>();
  const conflicts = new Map<string, string>();
  plan.slots.forEach((_slot, slotIndex) => {
    let taken = 0;
    for (const candidate of pool) {
      if (taken >= plan.count) break;
      const choice = candidate.options[slotIndex];
      if (!choice || used.has(candidate.offerId) || excluded.has(candidate.offerId)) continue;
      const conflict = constraintConflict(plan.constraints, picks.map((p) => p.candidate), candidate);
      if (conflict) {
        if (!conflicts.has(candidate.offerId)) conflicts.set(candidate.offerId, conflict);
        continue;
      }
      picks.push({ candidate, choice });
      used.add(candidate.offerId);
      taken++;
    }
  });
  const fallbacks = pool.filter((c) => !used.has(c.offerId) && !excluded.has(c.offerId));
  return {
    offers: picks.map(({ candidate, choice }, i) => ({ ...candidate, ...choice, rank: i + 1 })),
    fallbacks,
    rejections: !explain ? [] : fallbacks.map((c) => ({
      offerId: c.offerId,
      offerName: c.offerName,
      stage: "rank",
      reason: conflicts.get(c.offerId) ?? `below the top ${plan.count}`,
      detail: { position: c.position, rankScore: c.rankScore },
    })),
  };
}

function isLiveMandatory(offer: Offer, nowMs: number): boolean {
  if (!offer.mandatory || offer.emergencyExcluded) return false;
  const expires = parseInstant(offer.mandatoryExpiresAt);
  return expires !== null && expires > nowMs;
}

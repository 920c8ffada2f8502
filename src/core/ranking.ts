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
import type { CreativeChoice, Slot, SlotChoice, SlotOptions } from "./channel-coupling.js";
import { constraintConflict, type CrossOfferConstraint } from "./constraints.js";
import type { Reservation } from "./counters.js";
import type { Rejection } from "./rejections.js";
import { clvTilt, offerImpact, type ClvInput } from "./scoring/impact.js";
import type { ScoreColumns } from "./scoring/score-candidates.js";
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

/**
 * The candidates that passed every stage before scoring, column by column: index i of each column
 * is one offer. Columns, not a record per offer, because each stage used to build its own record
 * for each of hundreds of offers, and those records were a third of what a decision allocated.
 */
export interface Candidates {
  offers: readonly Offer[];
  options: readonly SlotOptions[];
  /** What selecting each offer would consume (contact-policy.ts). */
  reservations: readonly Reservation[][];
}

/** The candidates with their scores, in the same order. */
export interface RankInput extends Candidates {
  scores: ScoreColumns;
}

export interface SelectionOutput {
  offers: RankedOffer[];
  /** The rank rejections: every candidate not selected nor excluded, when explaining; else none. */
  rejections: Rejection[];
}

/** The profile's weights over the defaults: the named one, else the tenant default, else built-in. */
export function resolveRankingWeights(profiles: readonly RankingProfile[], profileId?: string): RankingWeights {
  const profile = profileId ? profiles.find((p) => p.id === profileId) : profiles.find((p) => p.isDefault);
  return { ...DEFAULT_RANKING_WEIGHTS, ...profile?.weights };
}

export function rankScore(weights: RankingWeights, offer: Offer, score: number, propensity: number, clv: ClvInput | null): number {
  // Written out term by term rather than over an array of pairs: it runs for every candidate.
  const total = weights.score + weights.priority + weights.businessValue + weights.propensity;
  const weighted =
    weights.score * score +
    weights.priority * (offer.priority / 100) +
    weights.businessValue * (offer.businessValue / 100) +
    weights.propensity * propensity;
  const base = total > 0 ? weighted / total : score;
  return clvTilt(base, offerImpact(offer), weights.clv, clv);
}

/** The ranked pool as `selectOffers` reads it: an array, or a RankOrder sorted only as far as it is read. */
export interface OrderedPool {
  readonly length: number;
  at(index: number): RankedCandidate | undefined;
}

/**
 * The candidates in ranking order, found one at a time: a selection reads the best few of
 * hundreds, and sorting them all was a fifth of a decision's core time. A binary heap over the
 * candidates' indexes yields them best first; the order is total (offer id breaks the last tie),
 * so reading it all gives exactly the sorted order. A candidate's object is made when it is
 * taken: most are never read.
 */
export function rankOrder(input: RankInput, weights: RankingWeights, clv: ClvInput | null, nowMs: number): RankOrder {
  return new RankOrder(input, weights, clv, nowMs);
}

/**
 * A class, not a closure over its state: decisions are compared member by member (a replay, the
 * pool against the main thread), and two orders read as far hold equal members.
 */
export class RankOrder implements OrderedPool {
  /** The candidates taken from the heap so far, in order; each one's `position` is its index here. */
  private readonly ordered: RankedCandidate[] = [];
  /** Indexes into `inputs`, a heap whose root ranks first; its first `size` entries are in it. */
  private readonly heap: number[];
  private size: number;
  // The sort keys in flat arrays, sized once: reading them through objects cost more than the
  // comparisons. Plain arrays, not typed ones: a typed array of this size keeps its memory outside
  // the heap, and allocating and freeing that per decision cost more than the sort it served.
  private readonly mandatory: boolean[];
  private readonly rank: number[];

  constructor(
    private readonly input: RankInput,
    weights: RankingWeights,
    clv: ClvInput | null,
    nowMs: number,
  ) {
    const { offers, scores } = input;
    const n = offers.length;
    this.heap = new Array<number>(n);
    this.mandatory = new Array<boolean>(n);
    this.rank = new Array<number>(n);
    for (let i = 0; i < n; i++) {
      this.heap[i] = i;
      this.mandatory[i] = isLiveMandatory(offers[i], nowMs);
      this.rank[i] = rankScore(weights, offers[i], scores.score[i], scores.propensity[i], clv);
    }
    this.size = n;
    for (let i = (n >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  get length(): number {
    return this.input.offers.length;
  }

  at(index: number): RankedCandidate | undefined {
    while (this.ordered.length <= index && this.size > 0) this.takeFirst();
    return this.ordered[index];
  }

  /** Live mandatory first, then rank score, priority (both descending) and offer id. */
  private before(a: number, b: number): boolean {
    if (this.mandatory[a] !== this.mandatory[b]) return this.mandatory[a];
    const x = this.input.offers[a];
    const y = this.input.offers[b];
    const order =
      this.rank[b] - this.rank[a] ||
      y.priority - x.priority ||
      (x.id < y.id ? -1 : x.id > y.id ? 1 : 0);
    return order < 0;
  }

  private takeFirst(): void {
    const heap = this.heap;
    const i = heap[0];
    const offer = this.input.offers[i];
    const scores = this.input.scores;
    this.ordered.push({
      position: this.ordered.length,
      offerId: offer.id,
      offerName: offer.name,
      categoryId: offer.categoryId ?? null,
      mandatory: this.mandatory[i],
      score: scores.score[i],
      rankScore: this.rank[i],
      propensity: scores.propensity[i],
      propensitySource: scores.propensitySource[i],
      options: this.input.options[i],
      reservations: this.input.reservations[i],
    });
    heap[0] = heap[--this.size];
    this.siftDown(0);
  }

  private siftDown(from: number): void {
    const heap = this.heap;
    let i = from;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= this.size) return;
      const right = left + 1;
      const first = right < this.size && this.before(heap[right], heap[left]) ? right : left;
      if (!this.before(heap[first], heap[i])) return;
      const swap = heap[i];
      heap[i] = heap[first];
      heap[first] = swap;
      i = first;
    }
  }
}

/**
 * Fills the plan's slots from the ordered pool, leaving out `excluded` offers (refused reservations).
 * It reads the pool only as far as the slots need, unless explaining: the rank rejections are
 * every candidate left.
 */
export function selectOffers(pool: OrderedPool, plan: SelectionPlan, excluded: ReadonlySet<string> = new Set(), explain = true): SelectionOutput {
  const picks: Array<{ candidate: RankedCandidate; choice: SlotChoice }> = [];
  const used = new Set<string>();
  const conflicts = new Map<string, string>();
  plan.slots.forEach((_slot, slotIndex) => {
    let taken = 0;
    for (let i = 0; taken < plan.count; i++) {
      const candidate = pool.at(i);
      if (!candidate) break;
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
  const offers = picks.map(({ candidate, choice }, i) => rankedOffer(candidate, choice, i + 1));
  return {
    offers,
    rejections: !explain ? [] : unselected(pool, offers, excluded).map((c) => ({
      offerId: c.offerId,
      offerName: c.offerName,
      stage: "rank",
      reason: conflicts.get(c.offerId) ?? `below the top ${plan.count}`,
      detail: { position: c.position, rankScore: c.rankScore },
    })),
  };
}

/** The candidates of the pool neither selected nor excluded, in order (the pool is read to its end). */
export function unselected(pool: OrderedPool, offers: readonly RankedOffer[], excluded: ReadonlySet<string> = new Set()): RankedCandidate[] {
  const selected = new Set(offers.map((o) => o.offerId));
  const out: RankedCandidate[] = [];
  for (let i = 0; i < pool.length; i++) {
    const c = pool.at(i)!;
    if (!selected.has(c.offerId) && !excluded.has(c.offerId)) out.push(c);
  }
  return out;
}

/**
 * The candidate with its creative and rank; members written out, as a spread of both took
 * microseconds per offer. The offer's reservations gain those of the channel its creative goes out
 * on when coupling judged that channel's limits (a decision without a channel): the keys cannot
 * overlap, since the offer's own checks had no channel to name.
 */
function rankedOffer(c: RankedCandidate, choice: SlotChoice, rank: number): RankedOffer {
  return {
    position: c.position,
    offerId: c.offerId,
    offerName: c.offerName,
    categoryId: c.categoryId,
    mandatory: c.mandatory,
    score: c.score,
    rankScore: c.rankScore,
    propensity: c.propensity,
    propensitySource: c.propensitySource,
    options: c.options,
    reservations: choice.channelReservations ? c.reservations.concat(choice.channelReservations) : c.reservations,
    creativeId: choice.creativeId,
    channelId: choice.channelId,
    placementId: choice.placementId,
    rank,
  };
}

function isLiveMandatory(offer: Offer, nowMs: number): boolean {
  if (!offer.mandatory || offer.emergencyExcluded) return false;
  const expires = parseInstant(offer.mandatoryExpiresAt);
  return expires !== null && expires > nowMs;
}

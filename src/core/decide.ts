/**
 * One decision: qualification → contact policy → channel coupling → scoring → ranking over a
 * prepared snapshot, as a pure function of (snapshot, input).
 *
 * Scoring is the only stage worth moving off the event loop, so a decision splits around it:
 * `prepareDecision` runs the stages before scoring and returns the serialisable ScoreTask;
 * the caller scores it inline or in the worker pool (scoring-path.ts); `completeDecision` ranks.
 * `decide` is the three in a row. The same inputs give the same decision byte for byte, which is
 * what lets a stored trace be re-run to explain a decision (src/decisions/trace-record.ts).
 */
import type { AttributeBag, Attributes } from "./attributes.js";
import type { Offer } from "./catalog.js";
import { coupleCreatives } from "./channel-coupling.js";
import { channelGate } from "./channel-gate.js";
import { applyContactPolicies, type ContactPolicyRow } from "./contact-policy.js";
import type { CounterCheck, Reservation } from "./counters.js";
import { flowRankNode } from "./flow.js";
import { scoringModelKeys } from "./model-lineup.js";
import { qualify, type QualificationRow } from "./qualification.js";
import {
  DEFAULT_COUNT,
  rankOrder,
  resolveRankingWeights,
  selectOffers,
  type Candidates,
  type OrderedPool,
  type RankedOffer,
  type RankingWeights,
  type SelectionPlan,
} from "./ranking.js";
import type { Rejection } from "./rejections.js";
import { resolveRequestScope, type RequestScopeInput } from "./request-scope.js";
import type { ClvInput } from "./scoring/impact.js";
import type { ModelConfig } from "./scoring/models.js";
import { anyDegraded, candidateScores, scoreCandidates, type CandidateScore, type ScoreColumns, type ScoreTask } from "./scoring/score-candidates.js";
import { NO_EVIDENCE, type EvidenceCounts } from "./scoring/evidence-counts.js";
import type { ScoringOffer } from "./scoring/scorer.js";
import type { DecisionSnapshot } from "./snapshot.js";
import type { RecentOutcome } from "./suppression.js";

export interface DecisionInput extends RequestScopeInput {
  customer: Attributes;
  context: Attributes;
  /** Offers per slot; default the flow's rank node count, else DEFAULT_COUNT. */
  count?: number;
  /** Overrides the score node's model, e.g. the experiment variant the service assigned. */
  modelKey?: string;
  /** Counter values read for counterPlan(snapshot, input).keys; absent keys are 0. */
  counters?: Record<string, number>;
  /**
   * counterPlan(snapshot, input).checks, when the caller has them: the same checks, not built a
   * second time. Absent, the core builds them. Not part of a recorded input (a replay builds them).
   */
  counterChecks?: ReadonlyMap<Offer, readonly CounterCheck[]>;
  /** Adaptive evidence; the service reads evidenceKeys(snapshot, input) in their order. None: the priors alone. */
  evidence?: EvidenceCounts;
  /**
   * Context buckets the service found over the tenant's cap on buckets (contextBuckets): a model
   * whose bucket is one of them reads and counts this request's evidence in the all-contexts
   * bucket instead. Record it to replay.
   */
  bucketsOverCap?: string[];
  recentOutcomes?: RecentOutcome[];
  clv: ClvInput | null;
  /** Seeds every random draw (Thompson sampling); record it to replay. */
  seed: string;
  /**
   * Explain the decision: scoring explanations and every stage's rows (scoringResults,
   * qualificationResults, contactPolicyResults, rank rejections). Without it a decision carries
   * what serving needs: the offers, the fallbacks, the rejections before ranking and the counts.
   */
  explain?: boolean;
}

/** A scoring row of the trace (spec 2.16), best first. */
export interface ScoringResult extends CandidateScore {
  offerName: string;
}

export interface Decision {
  flowId: string;
  modelKey: string;
  /** Returned offers, rank from 1; each with the reservations the service must take. */
  offers: RankedOffer[];
  /**
   * Every eligible offer in ranking order, ordered only as far as it has been read (a decision
   * served as ranked reads the best few); `refill` reads on from it, `unselected` to its end.
   */
  ranked: OrderedPool;
  selectionPlan: SelectionPlan;
  /** Every rejected offer with its stage (rank rejections only when explained). */
  rejectedOffers: Rejection[];
  /** How many offers were rejected, rank included, whether explained or not. */
  rejectedCount: number;
  scoringResults: ScoringResult[];
  qualificationResults: QualificationRow[];
  contactPolicyResults: ContactPolicyRow[];
  degradedScoring: boolean;
  rankingWeights: RankingWeights;
  policyVersionHash: string;
}

/** The decision up to scoring; `scoreTask` is what goes to the scorer. */
export interface PreparedDecision {
  scoreTask: ScoreTask;
  flowId: string;
  /** In the order of `scoreTask.candidates`. */
  candidates: Candidates;
  rejections: Rejection[];
  qualificationResults: QualificationRow[];
  contactPolicyResults: ContactPolicyRow[];
  selectionPlan: SelectionPlan;
  rankingWeights: RankingWeights;
  clv: ClvInput | null;
  nowMs: number;
  policyVersionHash: string;
}

/** The stages of a decision that a caller may want to observe (the service records a span for each). */
export type DecisionStage = "qualification" | "contact_policy" | "ranking";

/** Runs one stage; the default just runs it, so that the core stays free of any tracing. */
export type StageRunner = <T>(stage: DecisionStage, run: () => T) => T;

const runStage: StageRunner = (_stage, run) => run();

export function decide(snapshot: DecisionSnapshot, input: DecisionInput): Decision {
  const prepared = prepareDecision(snapshot, input);
  return completeDecision(prepared, scoreCandidates(prepared.scoreTask));
}

export function prepareDecision(snapshot: DecisionSnapshot, input: DecisionInput, stage: StageRunner = runStage): PreparedDecision {
  const scope = resolveRequestScope(snapshot, input);
  const bag: AttributeBag = { customer: input.customer, context: input.context };
  const explain = input.explain ?? false;
  const qualification = stage("qualification", () => qualify(scope.candidates, snapshot.qualificationRules, bag, scope.nowMs, explain));
  const contact = stage("contact_policy", () => applyContactPolicies(qualification.qualified, snapshot, {
    customerId: input.customerId,
    bag,
    channel: scope.channel,
    nowMs: scope.nowMs,
    counters: input.counters ?? {},
    counterChecks: input.counterChecks,
    recentOutcomes: input.recentOutcomes ?? [],
    explain,
  }));
  const gate = channelGate(snapshot, input, scope.channel, scope.nowMs);
  const coupling = coupleCreatives(contact.allowed, snapshot, scope.slots, scope.nowMs, gate, explain ? contact.results : null);
  const rankNode = flowRankNode(scope.flow);
  const { modelKey, shadowModelKeys } = scoringModelKeys(snapshot, scope.flow, input.modelKey);
  const models: Record<string, ModelConfig> = Object.fromEntries(
    [modelKey, ...shadowModelKeys].flatMap((key) => {
      const model = snapshot.models.get(key);
      return model ? [[key, model]] : [];
    }),
  );
  return {
    scoreTask: {
      candidates: scoringViews(coupling.coupled),
      customer: input.customer,
      context: input.context,
      models,
      modelKey,
      shadowModelKeys,
      evidence: input.evidence ?? NO_EVIDENCE,
      ...(input.bucketsOverCap?.length && { bucketsOverCap: input.bucketsOverCap }),
      clv: input.clv,
      seed: input.seed,
      explain,
    },
    flowId: scope.flow.id,
    candidates: { offers: coupling.coupled, options: coupling.options, reservations: reservationsOf(coupling.coupled, contact) },
    rejections: [...qualification.rejections, ...contact.rejections, ...coupling.rejections],
    qualificationResults: qualification.results,
    contactPolicyResults: contact.results,
    selectionPlan: { slots: scope.slots, count: input.count ?? rankNode.count ?? DEFAULT_COUNT, constraints: snapshot.constraints },
    rankingWeights: resolveRankingWeights(snapshot.rankingProfiles, rankNode.profileId),
    clv: input.clv,
    nowMs: scope.nowMs,
    policyVersionHash: snapshot.policyVersionHash,
  };
}

/** Ranks with the scores of `prepared.scoreTask`, one per candidate. */
export function completeDecision(prepared: PreparedDecision, scores: ScoreColumns, stage: StageRunner = runStage): Decision {
  const { offers, options, reservations } = prepared.candidates;
  if (scores.score.length !== offers.length) throw new Error(`${scores.score.length} scores for ${offers.length} candidates`);
  const explain = prepared.scoreTask.explain;
  const ranked = rankOrder({ offers, options, reservations, scores }, prepared.rankingWeights, prepared.clv, prepared.nowMs);
  const selection = stage("ranking", () => selectOffers(ranked, prepared.selectionPlan, undefined, explain));
  const scoringResults = !explain
    ? []
    : candidateScores(scores, prepared.scoreTask.candidates)
        // Object.assign, not `{ ...score, offerName }`: on Node 20's V8 a spread copy that gains a
        // member takes a slow path, about 3 µs for each of the 200 candidates.
        .map((score, i): ScoringResult => Object.assign({}, score, { offerName: offers[i].name }))
        .sort((a, b) => b.score - a.score || (a.offerId < b.offerId ? -1 : a.offerId > b.offerId ? 1 : 0));
  return {
    flowId: prepared.flowId,
    modelKey: prepared.scoreTask.modelKey,
    offers: selection.offers,
    ranked,
    selectionPlan: prepared.selectionPlan,
    rejectedOffers: [...prepared.rejections, ...selection.rejections],
    // Every candidate not returned is a fallback (nothing is excluded here).
    rejectedCount: prepared.rejections.length + offers.length - selection.offers.length,
    scoringResults,
    qualificationResults: prepared.qualificationResults,
    contactPolicyResults: prepared.contactPolicyResults,
    degradedScoring: anyDegraded(scores),
    rankingWeights: prepared.rankingWeights,
    policyVersionHash: prepared.policyVersionHash,
  };
}

/**
 * The reservations of each coupled offer, from contact policy's column. Coupling keeps the allowed
 * offers' order and objects, so one walk over both pairs them (a map by offer id cost a tenth of
 * the core's time).
 */
function reservationsOf(coupled: readonly Offer[], contact: { allowed: readonly Offer[]; reservations: Reservation[][] }): Reservation[][] {
  if (coupled.length === contact.allowed.length) return contact.reservations;
  let j = 0;
  return coupled.map((offer) => {
    while (contact.allowed[j] !== offer) j++;
    return contact.reservations[j];
  });
}

/**
 * The selection again without the `refused` offers (their reservations failed). Offers ranked
 * before the first refused one are unchanged, so the service can keep the reservations it holds
 * and continue from there (docs/decisioning-core.md, "Counters and reservations").
 */
export function refill(decision: Decision, refused: ReadonlySet<string>): RankedOffer[] {
  return selectOffers(decision.ranked, decision.selectionPlan, refused, false).offers;
}

/**
 * The scoring view of each offer, once per offer object: a snapshot's offers are immutable and
 * serve every decision until the configuration changes, and a stable object lets the scorers
 * memoise per offer (adaptive.ts keeps its evidence keys on it).
 */
const scoringOffers = new WeakMap<Offer, ScoringOffer>();

function scoringOffer(offer: Offer): ScoringOffer {
  let view = scoringOffers.get(offer);
  if (!view) scoringOffers.set(offer, (view = scoringView(offer)));
  return view;
}

/**
 * The scoring views of a list of candidates, once per list: a decision that drops none of its
 * flow's candidates hands on the snapshot's own list (Subsequence), so most decisions find the
 * views made, where looking each offer up cost a tenth of the core's time.
 */
const scoringLists = new WeakMap<readonly Offer[], readonly ScoringOffer[]>();

function scoringViews(offers: readonly Offer[]): readonly ScoringOffer[] {
  let views = scoringLists.get(offers);
  if (!views) scoringLists.set(offers, (views = offers.map(scoringOffer)));
  return views;
}

function scoringView(offer: Offer): ScoringOffer {
  return {
    id: offer.id,
    categoryId: offer.categoryId ?? null,
    priority: offer.priority,
    businessValue: offer.businessValue,
    margin: offer.margin ?? null,
    revenueValue: offer.revenueValue ?? null,
    productType: offer.productType ?? null,
    tags: offer.tags ?? [],
  };
}

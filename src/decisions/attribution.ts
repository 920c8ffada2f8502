import type { RespondRequest } from "../../gen/decisioning/v1/decisions_pb.js";
import { AppError, badRequest, invalidFields, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { OutcomeStore, ShownIn, StoredOffer, StoredRecommendation } from "./outcome-store.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** The customer seeing the offer: when, and in which context bucket it was scored. */
export interface Exposure {
  at: Date;
  bucket: string | null;
}

/** Where an outcome landed: the offer and, when the ladder found one, the row it was shown in. */
export interface Attribution {
  offerId: string;
  creativeId: string | null;
  channelId: string | null;
  placementId: string | null;
  recommendationId: string | null;
  interactionId: string | null;
  rank: number | null;
  /** The recommendation or impression row the ladder attributed to, as an exposure of the offer. */
  exposure: Exposure | null;
}

type LadderStore = Pick<OutcomeStore, "recommendation" | "recommendationByInteraction" | "latestWithRank" | "latestImpressionWithRank">;

/** Finds the offer an outcome is about (spec 4.4), from the request, stored recommendations and impression rows. */
export class AttributionLadder {
  constructor(private readonly store: LadderStore) {}

  /**
   * The ladder of spec 4.4, first match wins: (1) the stored recommendation plus rank; (2) a legacy
   * interaction id inside a stored recommendation plus rank; (3) the customer's most recent
   * recommendation or impression row with that rank. A creativeId resolves offer, channel and
   * placement directly.
   */
  async attribute(tenantId: string, customerId: string, req: RespondRequest, compiled: CompiledTenant): Promise<Attribution> {
    if (req.creativeId) return this.byCreative(tenantId, customerId, req, compiled);
    const rank = req.rank!;
    const legacy = req.interactionId || req.recommendationId;
    const found =
      (isUuid(req.recommendationId) && atRank(await this.store.recommendation(tenantId, req.recommendationId), customerId, rank, req, compiled)) ||
      (isUuid(legacy) && atRank(await this.store.recommendationByInteraction(tenantId, legacy), customerId, rank, req, compiled)) ||
      (await this.latestAtRank(tenantId, customerId, rank, compiled, req));
    if (found) return found;
    throw new AppError({
      code: "INVALID_ARGUMENT",
      reason: "NO_RECOMMENDATION",
      message: `No recommendation found for customer=${customerId} rank=${rank}`,
      // Spec 7's structured body names the recommendation the caller asked about.
      details: req.recommendationId ? { recommendationId: req.recommendationId } : undefined,
    });
  }

  /**
   * Rung 3: the newer of the customer's latest recommendation with an offer at `rank` and latest
   * impression row at `rank`. An impression recorded through Respond (a delivery confirmed by the
   * channel, say) can name a different offer than the recommendation before it, and is the later
   * word on what the customer saw. On a tie (Recommend's own impression rows) the recommendation wins.
   */
  private async latestAtRank(tenantId: string, customerId: string, rank: number, compiled: CompiledTenant, req: RespondRequest): Promise<Attribution | null> {
    const [rec, impression] = await Promise.all([
      this.store.latestWithRank(tenantId, customerId, rank),
      this.store.latestImpressionWithRank(tenantId, customerId, rank, compiled.impressionOutcomes),
    ]);
    if (impression && (!rec || impression.at > rec.created_at)) return shown(impression, impression, req, compiled);
    return atRank(rec, customerId, rank, req, compiled);
  }

  private async byCreative(tenantId: string, customerId: string, req: RespondRequest, compiled: CompiledTenant): Promise<Attribution> {
    const creative = compiled.creatives.get(req.creativeId);
    if (!creative) throw badRequest("VALIDATION_FAILED", `creativeId: unknown creative ${req.creativeId}`);
    const rec = req.recommendationId && isUuid(req.recommendationId) ? await this.store.recommendation(tenantId, req.recommendationId) : null;
    const inRec = rec?.customer_id === customerId ? rec.offers.find((o) => o.creativeId === creative.id) : undefined;
    checkGivenReferences(req, compiled, [creative, inRec]);
    const offerId = req.offerId || creative.offerId;
    return {
      offerId,
      creativeId: creative.id,
      // The channel it went out on, as the recommendation recorded it; else the one it goes out on
      // without a decision channel (its own, else its placement's): the budget a conversion counts against.
      channelId: req.channelId || inRec?.channelId || creative.channelId || placementChannel(compiled, creative.placementId),
      placementId: req.placementId || creative.placementId || null,
      recommendationId: inRec ? rec!.id : null,
      interactionId: inRec ? rec!.interaction_id : null,
      rank: inRec?.rank ?? req.rank ?? null,
      exposure: inRec?.offerId === offerId ? { at: rec!.created_at, bucket: inRec.bucket ?? null } : null,
    };
  }
}

function placementChannel(compiled: CompiledTenant, placementId: string | null | undefined): string | null {
  return (placementId && compiled.snapshot.placementsById.get(placementId)?.channelId) || null;
}

/** The offer at `rank` of a recommendation of this customer, or null. */
function atRank(rec: StoredRecommendation | null, customerId: string, rank: number, req: RespondRequest, compiled: CompiledTenant): Attribution | null {
  const offer = rec?.customer_id === customerId ? rec.offers.find((o) => o.rank === rank) : undefined;
  return rec && offer ? shown(offer, { recommendationId: rec.id, interactionId: rec.interaction_id, at: rec.created_at }, req, compiled) : null;
}

/** The outcome is about `offer` as it was shown; explicit channel and placement ids win. */
function shown(offer: StoredOffer, where: ShownIn, req: RespondRequest, compiled: CompiledTenant): Attribution {
  checkGivenReferences(req, compiled, [offer]);
  return {
    offerId: offer.offerId,
    creativeId: offer.creativeId,
    channelId: req.channelId || offer.channelId,
    placementId: req.placementId || offer.placementId,
    recommendationId: where.recommendationId,
    interactionId: where.interactionId,
    rank: offer.rank,
    exposure: { at: where.at, bucket: offer.bucket ?? null },
  };
}

type References = { offerId: string; channelId?: string | null; placementId?: string | null };

const GIVEN_REFERENCES = [
  { field: "offerId", noun: "offer", live: (c: CompiledTenant, id: string) => c.offerIds.has(id) },
  { field: "channelId", noun: "channel", live: (c: CompiledTenant, id: string) => c.channels.get(id) === id },
  { field: "placementId", noun: "placement", live: (c: CompiledTenant, id: string) => c.placements.get(id) === id },
] as const;

/**
 * Spec 7: an unknown tenant reference is 400. An offer, channel or placement id given in the body
 * must name a live one of the tenant (from the snapshot: no query), or be the one the attributed
 * recommendation, impression or creative carries, which may have been deleted since: a late outcome
 * about what the customer was shown still records.
 */
function checkGivenReferences(req: RespondRequest, compiled: CompiledTenant, carried: Array<References | undefined>): void {
  const violations: FieldViolation[] = [];
  for (const { field, noun, live } of GIVEN_REFERENCES) {
    const id = req[field];
    if (!id || live(compiled, id) || carried.some((c) => c?.[field] === id)) continue;
    violations.push({ field, message: `unknown ${noun} ${id}` });
  }
  if (violations.length) throw invalidFields(violations);
}

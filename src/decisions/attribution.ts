import type { RespondRequest } from "../../gen/decisioning/v1/decisions_pb.js";
import { AppError, badRequest } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { OutcomeStore, StoredOffer, StoredRecommendation } from "./outcome-store.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** Where an outcome landed: the offer and, when the ladder found it, the recommendation. */
export interface Attribution {
  offerId: string;
  creativeId: string | null;
  channelId: string | null;
  placementId: string | null;
  recommendation: StoredRecommendation | null;
  rank: number | null;
}

/** Finds the offer an outcome is about (spec 4.4), from the request and the stored recommendations. */
export class AttributionLadder {
  constructor(private readonly store: Pick<OutcomeStore, "recommendation" | "recommendationByInteraction" | "latestWithRank">) {}

  /**
   * The ladder of spec 4.4, first match wins: (1) the stored recommendation plus rank; (2) a legacy
   * interaction id inside a stored recommendation plus rank; (3) the customer's most recent
   * recommendation with that rank. A creativeId resolves offer, channel and placement directly.
   */
  async attribute(tenantId: string, customerId: string, req: RespondRequest, compiled: CompiledTenant): Promise<Attribution> {
    if (req.creativeId) {
      const creative = compiled.creatives.get(req.creativeId);
      if (!creative) throw badRequest("VALIDATION_FAILED", `creativeId: unknown creative ${req.creativeId}`);
      const rec = req.recommendationId && isUuid(req.recommendationId) ? await this.store.recommendation(tenantId, req.recommendationId) : null;
      const inRec = rec?.customer_id === customerId ? rec.offers.find((o) => o.creativeId === creative.id) : undefined;
      return {
        offerId: req.offerId || creative.offerId,
        creativeId: creative.id,
        channelId: req.channelId || creative.channelId || null,
        placementId: req.placementId || creative.placementId || null,
        recommendation: inRec ? rec : null,
        rank: inRec?.rank ?? req.rank ?? null,
      };
    }
    const rank = req.rank!;
    const candidates: Array<() => Promise<StoredRecommendation | null>> = [
      async () => (isUuid(req.recommendationId) ? this.store.recommendation(tenantId, req.recommendationId) : null),
      async () => {
        const legacy = req.interactionId || req.recommendationId;
        return isUuid(legacy) ? this.store.recommendationByInteraction(tenantId, legacy) : null;
      },
      () => this.store.latestWithRank(tenantId, customerId, rank),
    ];
    for (const find of candidates) {
      const rec = await find();
      const offer = rec && rec.customer_id === customerId ? rec.offers.find((o) => o.rank === rank) : undefined;
      if (rec && offer) return fromStored(rec, offer, req);
    }
    throw new AppError({
      code: "INVALID_ARGUMENT",
      reason: "NO_RECOMMENDATION",
      message: `No recommendation found for customer=${customerId} rank=${rank}`,
    });
  }
}

function fromStored(rec: StoredRecommendation, offer: StoredOffer, req: RespondRequest): Attribution {
  return {
    offerId: offer.offerId,
    creativeId: offer.creativeId,
    channelId: req.channelId || offer.channelId,
    placementId: req.placementId || offer.placementId,
    recommendation: rec,
    rank: offer.rank,
  };
}

import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  DecisionTraceSummarySchema,
  RecommendResponseSchema,
  type DecisionTraceSummary,
  type RecommendResponse,
} from "../../gen/decisioning/v1/decisions_pb.js";
import type { Decision, DecisionInput, RankedOffer, Rejection } from "../core/index.js";
import { isUuid, newId } from "../platform/ids.js";
import type { RecommendationWrite, TraceRow } from "./decision-store.js";
import { decisionFunnel } from "./decision-metrics.js";
import type { TraceRecord } from "./trace-record.js";
import type { ExperimentArm } from "./experiment-arms.js";
import type { PublishedContent } from "../content/published-content.js";

/** The ExperimentAssignment message's fields: `experimentId` repeats `id` for clients of its first version. */
export function experimentAssignment(arm: Pick<ExperimentArm, "id" | "key" | "variant">) {
  return { experimentId: arm.id, id: arm.id, key: arm.key, variant: arm.variant };
}

/** A flow id the tenant stored, or undefined for the built-in default flow (whose id is `default`). */
export const storedFlowId = (id: string): string | undefined => (isUuid(id) ? id : undefined);

export function toRecommendResponse(r: {
  recommendationId: string;
  interactionId: string | null;
  customerId: string;
  decision: Decision;
  offers: RankedOffer[];
  rejected: Rejection[];
  explain: boolean;
  experiment: ExperimentArm | null;
  createdAt: Date;
  /** Creative id → the published content it serves. */
  creativeContent: ReadonlyMap<string, PublishedContent>;
}): RecommendResponse {
  return create(RecommendResponseSchema, {
    recommendationId: r.recommendationId,
    interactionId: r.interactionId ?? undefined,
    customerId: r.customerId,
    offers: r.offers.map((o) => ({
      rank: o.rank,
      offerId: o.offerId,
      offerName: o.offerName,
      creativeId: o.creativeId ?? undefined,
      channelId: o.channelId ?? undefined,
      placementId: o.placementId ?? undefined,
      score: o.score,
      propensity: o.propensity,
      propensitySource: o.propensitySource,
      mandatory: o.mandatory,
      content: o.creativeId ? r.creativeContent.get(o.creativeId) : undefined,
    })),
    flowId: storedFlowId(r.decision.flowId),
    experiment: r.experiment ? experimentAssignment(r.experiment) : undefined,
    degraded: r.decision.degradedScoring,
    rejectedOffers: r.explain
      ? r.rejected.map((x) => ({ offerId: x.offerId, offerName: x.offerName, stage: x.stage, reason: x.reason, detail: x.detail as JsonObject | undefined }))
      : [],
    createdAt: timestampFromDate(r.createdAt),
  });
}

/** A single-placement request: its offers are impressions with an interaction id (spec 4.4). */
export const singleSlot = (input: Pick<DecisionInput, "placements">): boolean => (input.placements ?? []).length <= 1;

/** A decision's rows as Recommend stores them: the recommendation (id = the input's seed) and its impressions. */
export function toRecommendationWrite(d: {
  tenantId: string;
  input: DecisionInput;
  decision: Decision;
  offers: RankedOffer[];
  refusals: Rejection[];
  bucket: string;
  scoredBy: string[];
  experiment: ExperimentArm | null;
  interactionId: string | null;
}): RecommendationWrite {
  const { input, offers, bucket } = d;
  const oneSlot = singleSlot(input);
  return {
    tenantId: d.tenantId,
    rec: {
      id: input.seed,
      customer_id: input.customerId,
      flow_id: storedFlowId(d.decision.flowId) ?? null,
      interaction_id: d.interactionId,
      channel_id: input.channel ?? null,
      multi_placement: !oneSlot,
      offers: offers.map((o) => ({
        rank: o.rank,
        offerId: o.offerId,
        creativeId: o.creativeId,
        channelId: o.channelId,
        placementId: o.placementId,
        score: o.score,
        bucket,
      })),
      context: input.context,
      scored_by: d.scoredBy,
      experiment_id: d.experiment?.id ?? null,
      experiment_variant: d.experiment?.variant ?? null,
      ...decisionFunnel(d.decision, d.refusals),
    },
    // Multi-placement responses write no interaction rows (spec 4.4): Respond then needs creativeId.
    impressions: oneSlot
      ? offers.map((o) => ({
          id: newId(),
          rank: o.rank,
          offer_id: o.offerId,
          creative_id: o.creativeId,
          channel_id: o.channelId,
          placement_id: o.placementId,
          context_bucket: bucket,
        }))
      : [],
  };
}

/** The trace row of a sampled decision: its replay record, hashed later by the trace writer. */
export function toTraceRow(
  tenantId: string,
  recommendationId: string,
  decision: Decision,
  record: TraceRecord,
  createdAt: Date,
): Omit<TraceRow, "inputs_hash"> {
  return {
    tenant_id: tenantId,
    id: newId(),
    recommendation_id: recommendationId,
    customer_id: record.inputs.customerId,
    flow_id: storedFlowId(decision.flowId) ?? null,
    degraded_scoring: decision.degradedScoring,
    selected_count: record.selectedOffers.length,
    rejected_count: decision.rejectedCount + record.refusals.length,
    trace: record,
    policy_version_hash: decision.policyVersionHash,
    created_at: createdAt,
  };
}

export function toTraceSummary(row: Omit<TraceRow, "trace">): DecisionTraceSummary {
  return create(DecisionTraceSummarySchema, {
    id: row.id,
    recommendationId: row.recommendation_id,
    customerId: row.customer_id,
    flowId: row.flow_id ?? undefined,
    selectedCount: row.selected_count,
    rejectedCount: row.rejected_count,
    degradedScoring: row.degraded_scoring,
    createdAt: timestampFromDate(row.created_at),
  });
}

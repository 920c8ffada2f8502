import { create, fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  DecisionTraceSchema,
  DecisionTraceSummarySchema,
  RecommendResponseSchema,
  type DecisionTrace,
  type DecisionTraceSummary,
  type RecommendResponse,
} from "../../gen/decisioning/v1/decisions_pb.js";
import type { Decision, DecisionInput, RankedOffer, Rejection } from "../core/index.js";
import { isUuid, newId } from "../platform/ids.js";
import type { TraceRow } from "./decision-store.js";

const json = (value: unknown) => JSON.parse(JSON.stringify(value)) as JsonValue;
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
  createdAt: Date;
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
    })),
    flowId: storedFlowId(r.decision.flowId),
    degraded: r.decision.degradedScoring,
    rejectedOffers: r.explain
      ? r.rejected.map((x) => ({ offerId: x.offerId, offerName: x.offerName, stage: x.stage, reason: x.reason, detail: x.detail as JsonObject | undefined }))
      : [],
    createdAt: timestampFromDate(r.createdAt),
  });
}

/** Everything spec 2.16 names, plus the inputs a replay needs to re-run the decision exactly. */
export function toTraceRow(
  tenantId: string,
  recommendationId: string,
  input: DecisionInput,
  decision: Decision,
  offers: RankedOffer[],
  rejected: Rejection[],
  createdAt: Date,
): TraceRow {
  return {
    tenant_id: tenantId,
    id: newId(),
    recommendation_id: recommendationId,
    customer_id: input.customerId,
    flow_id: storedFlowId(decision.flowId) ?? null,
    degraded_scoring: decision.degradedScoring,
    selected_count: offers.length,
    rejected_count: rejected.length,
    trace: {
      scoringResults: decision.scoringResults,
      selectedOffers: offers.map(({ reservations: _r, options: _o, ...o }) => o),
      qualificationResults: decision.qualificationResults,
      contactPolicyResults: decision.contactPolicyResults,
      rejectedOffers: rejected,
      rankingWeights: decision.rankingWeights,
      flowId: decision.flowId,
      modelKey: decision.modelKey,
      inputs: {
        customerId: input.customerId,
        customer: input.customer,
        context: input.context,
        channel: input.channel ?? null,
        placements: input.placements ?? [],
        flowId: input.flowId ?? null,
        count: input.count ?? null,
        now: input.now,
        seed: input.seed,
        counters: input.counters ?? {},
        adaptiveCounts: input.adaptiveCounts ?? {},
        recentOutcomes: input.recentOutcomes ?? [],
        clv: input.clv,
      },
    },
    inputs_hash: decision.inputsHash,
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

/** The stored trace JSON read straight into the message: one shape, no field-by-field copy. */
export function toDecisionTrace(row: TraceRow): DecisionTrace {
  const t = row.trace as Record<string, unknown>;
  return fromJson(DecisionTraceSchema, json({
    id: row.id,
    recommendationId: row.recommendation_id,
    customerId: row.customer_id,
    flowId: row.flow_id,
    scoringResults: t.scoringResults ?? [],
    selectedOffers: t.selectedOffers ?? [],
    qualificationResults: t.qualificationResults ?? [],
    contactPolicyResults: t.contactPolicyResults ?? [],
    // Rows written before this column existed read as an empty array (spec 2.16).
    rejectedOffers: t.rejectedOffers ?? [],
    degradedScoring: row.degraded_scoring,
    rankingWeights: t.rankingWeights ?? {},
    inputsHash: row.inputs_hash,
    policyVersionHash: row.policy_version_hash,
    inputs: t.inputs ?? {},
    createdAt: row.created_at.toISOString(),
  }));
}

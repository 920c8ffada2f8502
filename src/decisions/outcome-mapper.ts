import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { RespondResponseSchema, type RespondResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import type { OutcomeRow } from "./outcome-store.js";

/** What Respond answers about a record (spec 2.5). */
export type OutcomeStatus = "recorded" | "already_recorded" | "recorded_without_adaptation";

export function toOutcomeRecord(row: OutcomeRow, status: OutcomeStatus): RespondResponse {
  return create(RespondResponseSchema, {
    id: row.id,
    status,
    customerId: row.customer_id,
    outcome: row.outcome,
    idempotencyKey: row.idempotency_key,
    recommendationId: row.recommendation_id ?? undefined,
    rank: row.rank ?? undefined,
    interactionId: row.interaction_id ?? undefined,
    offerId: row.offer_id,
    creativeId: row.creative_id ?? undefined,
    channelId: row.channel_id ?? undefined,
    placementId: row.placement_id ?? undefined,
    direction: row.direction,
    context: row.context as JsonObject,
    outcomeDetails: row.outcome_details as JsonObject,
    conversionValue: row.conversion_value ?? undefined,
    responseTime: row.response_time ?? undefined,
    timestamp: timestampFromDate(row.occurred_at),
    createdAt: timestampFromDate(row.created_at),
  });
}

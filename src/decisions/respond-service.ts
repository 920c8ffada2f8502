import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  RespondBulkResponseSchema,
  type RespondBulkRequest,
  type RespondBulkResponse,
  type RespondRequest,
  type RespondResponse,
} from "../../gen/decisioning/v1/decisions_pb.js";
import { ALL_CONTEXTS_BUCKET, mergeAttributes } from "../core/index.js";
import type { CallInfo, TenantContext } from "../platform/context.js";
import { AppError, badRequest, isAppError } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import type { Attribution, AttributionLadder } from "./attribution.js";
import type { OutcomeLearning } from "./outcome-learning.js";
import { toOutcomeRecord, type OutcomeStatus } from "./outcome-mapper.js";
import { canonicalPayload, defaultIdempotencyKey, hashPayload, type OutcomeReplay } from "./outcome-replay.js";
import type { OutcomeStore } from "./outcome-store.js";
import type { OutcomeWriter } from "./outcome-writer.js";
import { validateOutcome } from "./outcome-validation.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** Spec 8: outcomes adapt models only within 30 days of the customer's exposure to the offer. */
export const ADAPTATION_LOOKBACK_DAYS = 30;
export const BULK_MAX_ITEMS = 500;

/** Errors that belong to one bulk item, as that item alone would have been answered (spec 7). */
const ITEM_ERRORS: Partial<Record<string, { status: number; code: string }>> = {
  INVALID_ARGUMENT: { status: 400, code: "BAD_REQUEST" },
  NOT_FOUND: { status: 404, code: "NOT_FOUND" },
};

export interface RespondDeps {
  snapshots: { get(tenantId: string): Promise<CompiledTenant> };
  store: OutcomeStore;
  /** Inserts outcomes by group commit (outcome-writer.ts). */
  writer: Pick<OutcomeWriter, "insert">;
  replay: OutcomeReplay;
  attribution: AttributionLadder;
  learning: OutcomeLearning;
  logger: Logger;
}

/**
 * Respond (spec 2.5, 4.4): records an outcome exactly once per idempotency key, attributes it by
 * the ladder of 4.4, and, on the first write only, teaches the adaptive models, feeds suppression
 * and counts conversions and their spend against budgets.
 */
export class RespondService {
  constructor(private readonly deps: RespondDeps) {}

  async respond(ctx: TenantContext, req: RespondRequest, call: CallInfo): Promise<RespondResponse> {
    return this.record(ctx, req, req.idempotencyKey || call.header("idempotency-key") || "");
  }

  async respondBulk(ctx: TenantContext, req: RespondBulkRequest): Promise<RespondBulkResponse> {
    if (req.items.length === 0 || req.items.length > BULK_MAX_ITEMS) {
      throw badRequest("VALIDATION_FAILED", `items: must hold 1 to ${BULK_MAX_ITEMS} outcomes`);
    }
    const results = [];
    for (const [index, item] of req.items.entries()) {
      const key = item.idempotencyKey || defaultIdempotencyKey(item);
      try {
        const record = await this.record(ctx, item, key);
        results.push({ index, status: record.status, idempotencyKey: key, record });
      } catch (err) {
        // Only what is wrong with the item itself fails the item; anything else fails the batch.
        const itemError = isAppError(err) ? ITEM_ERRORS[err.code] : undefined;
        if (!itemError) throw err;
        const { message, reason } = err as AppError;
        results.push({ index, status: "failed", idempotencyKey: key, error: { ...itemError, message, reason } });
      }
    }
    return create(RespondBulkResponseSchema, {
      results,
      recorded: results.filter((r) => r.status === "recorded" || r.status === "recorded_without_adaptation").length,
      alreadyRecorded: results.filter((r) => r.status === "already_recorded").length,
      failed: results.filter((r) => r.status === "failed").length,
    });
  }

  private async record(ctx: TenantContext, req: RespondRequest, idempotencyKey: string): Promise<RespondResponse> {
    const { snapshots, store, writer, replay, attribution, learning, logger } = this.deps;
    const compiled = await snapshots.get(ctx.tenantId);
    const { customerId, outcome, category } = validateOutcome(req, idempotencyKey, compiled);
    const payload = canonicalPayload(req);
    const replayed = replay.recall(ctx.tenantId, idempotencyKey, payload, compiled);
    if (replayed) return replayed;
    const hash = hashPayload(payload);

    // A key not recorded by this process is most often fresh: it is attributed and inserted at
    // once, and the unique index tells a replay (replayWinner below), one PostgreSQL round trip
    // fewer than looking the key up first. Attribution only reads, so a replay loses nothing by
    // it; one that no longer attributes (its recommendation gone) still replays.
    const at = new Date();
    let attributed: Attribution;
    try {
      attributed = await attribution.attribute(ctx.tenantId, customerId, req, compiled);
    } catch (err) {
      const earlier = await replay.find(ctx.tenantId, idempotencyKey, payload, compiled).catch(() => null);
      if (earlier) return earlier;
      throw err;
    }
    // The lookback runs back from when the outcome happened (a timestamp ahead of this server's
    // clock counts as now), and exposures count by when they happened: an impression backfilled
    // with last year's timestamp is not a recent one.
    const occurredAt = req.timestamp ? timestampDate(req.timestamp) : at;
    const since = new Date(Math.min(occurredAt.getTime(), at.getTime()) - ADAPTATION_LOOKBACK_DAYS * 86_400_000);
    // The attributed row is itself the exposure when it is recent: no second query.
    const { exposure } = attributed;
    const recent = exposure && exposure.at >= since ? exposure : await store.recentExposure(ctx.tenantId, customerId, attributed.offerId, since, compiled.impressionOutcomes);
    const bucket = exposure?.bucket ?? recent?.bucket ?? ALL_CONTEXTS_BUCKET;
    // Spec 2.5: only a positive outcome can go without the adaptation it would have taught.
    const status: OutcomeStatus = category === "positive" && !recent ? "recorded_without_adaptation" : "recorded";
    const row = await writer.insert(ctx.tenantId, {
      id: newId(),
      customer_id: customerId,
      recommendation_id: attributed.recommendationId,
      interaction_id: attributed.interactionId ?? (req.interactionId || null),
      rank: attributed.rank,
      offer_id: attributed.offerId,
      creative_id: attributed.creativeId,
      channel_id: attributed.channelId,
      placement_id: attributed.placementId,
      outcome,
      direction: req.direction || (category === "impression" ? "outbound" : "inbound"),
      context_bucket: bucket,
      idempotency_key: idempotencyKey,
      status,
      payload_hash: hash,
      context: storedContext(req),
      outcome_details: req.outcomeDetails ?? {},
      conversion_value: req.conversionValue ?? null,
      response_time: req.responseTime ?? null,
      occurred_at: occurredAt,
    });
    if (!row) return replay.replayWinner(ctx.tenantId, idempotencyKey, payload, compiled);
    const answer = toOutcomeRecord(row, status);
    replay.remember(ctx.tenantId, idempotencyKey, answer, compiled, payload);
    // The record is committed; a retry would only replay it. So a learning failure (Redis down) is
    // logged for the operator rather than answered as an error the client cannot fix by retrying.
    await learning.learn(ctx.tenantId, compiled, row, category, status).catch((err) =>
      logger.error({ err, recordId: row.id }, "outcome recorded but not learned: counters unavailable"),
    );
    return answer;
  }
}

/** attributes merged into context, explicit context keys winning; the names of 2.5 beside them. */
function storedContext(req: RespondRequest): JsonObject {
  const names: JsonObject = {};
  if (req.channel) names.channel = req.channel;
  if (req.placement) names.placement = req.placement;
  if (req.deviceType) names.deviceType = req.deviceType;
  return mergeAttributes<JsonValue>(req.attributes ?? {}, names, req.context ?? {});
}

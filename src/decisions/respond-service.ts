import { createHash } from "node:crypto";
import { create, toJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import canonicalize from "canonicalize";
import {
  RespondBulkResponseSchema,
  RespondRequestSchema,
  RespondResponseSchema,
  type RespondBulkRequest,
  type RespondBulkResponse,
  type RespondRequest,
  type RespondResponse,
} from "../../gen/decisioning/v1/decisions_pb.js";
import { adaptiveCountKey, budgetChecks, toMicros, ALL_CONTEXTS_BUCKET } from "../core/index.js";
import type { CallInfo, TenantContext } from "../platform/context.js";
import { AppError, badRequest, invalidFields, isAppError, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import type { Counters } from "./counters.js";
import type { CounterIncrement } from "./reservation-store.js";
import type { OutcomeRow, OutcomeStore, StoredOffer, StoredRecommendation } from "./outcome-store.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** Spec 8: outcomes adapt models only within 30 days of the customer's exposure to the offer. */
export const ADAPTATION_LOOKBACK_DAYS = 30;
export const BULK_MAX_ITEMS = 500;
const MAX_TEXT = 255;
/** Records this process wrote or read, kept to answer replays without a query. */
const RECENT_RECORDS = 50_000;
const DIRECTIONS = ["inbound", "outbound"];

type Status = "recorded" | "already_recorded" | "recorded_without_adaptation";

/** Errors that belong to one bulk item, as that item alone would have been answered (spec 7). */
const ITEM_ERRORS: Partial<Record<string, { status: number; code: string }>> = {
  INVALID_ARGUMENT: { status: 400, code: "BAD_REQUEST" },
  NOT_FOUND: { status: 404, code: "NOT_FOUND" },
};

/** Where an outcome landed: the offer and, when the ladder found it, the recommendation. */
interface Attribution {
  offerId: string;
  creativeId: string | null;
  channelId: string | null;
  placementId: string | null;
  recommendation: StoredRecommendation | null;
  rank: number | null;
}

const text = (v: string) => v.trim();

/**
 * Respond (spec 2.5, 4.4): records an outcome exactly once per idempotency key, attributes it by
 * the ladder of 4.4, and, on the first write only, teaches the adaptive models, feeds suppression
 * and counts conversions and their spend against budgets.
 */
export class RespondService {
  /**
   * A stored record never changes (one per key, by the unique index), so a replay this process
   * has seen is answered from memory. Each entry is valid only under the tenant snapshot it was
   * kept with: a workspace reset (which deletes the records) replaces the snapshot in every
   * process, and with it every entry of the tenant.
   */
  private readonly recent = new Map<string, { row: OutcomeRow; under: CompiledTenant }>();

  constructor(
    private readonly snapshots: { get(tenantId: string): Promise<CompiledTenant> },
    private readonly store: OutcomeStore,
    private readonly counters: Pick<Counters, "reservations" | "evidence" | "negatives">,
    private readonly logger: Logger,
  ) {}

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
    const compiled = await this.snapshots.get(ctx.tenantId);
    const { outcome, category } = this.validate(req, idempotencyKey, compiled);
    const hash = payloadHash(req);
    // A replay is memory or one indexed read: no attribution, no learning, no counters.
    const recentKey = `${ctx.tenantId} ${idempotencyKey}`;
    const known = this.recent.get(recentKey);
    if (known?.under === compiled) return this.replay(known.row, hash);
    const earlier = await this.store.byKey(ctx.tenantId, idempotencyKey);
    if (earlier) return this.replay(this.remember(recentKey, earlier, compiled), hash);

    const customerId = text(req.customerId);
    const at = new Date();
    const attribution = await this.attribute(ctx.tenantId, customerId, req, compiled);
    const since = new Date(at.getTime() - ADAPTATION_LOOKBACK_DAYS * 86_400_000);
    const stored = attribution.recommendation?.offers.find((o) => o.offerId === attribution.offerId);
    // The attributed recommendation is itself the exposure when it is recent: no second query.
    const exposure =
      stored && attribution.recommendation!.created_at >= since
        ? { bucket: stored.bucket ?? null }
        : await this.store.recentExposure(ctx.tenantId, customerId, attribution.offerId, since);
    const bucket = stored?.bucket ?? exposure?.bucket ?? ALL_CONTEXTS_BUCKET;
    const status: Status = exposure ? "recorded" : "recorded_without_adaptation";
    const row = await this.store.insert(ctx.tenantId, {
      id: newId(),
      customer_id: customerId,
      recommendation_id: attribution.recommendation?.id ?? null,
      interaction_id: attribution.recommendation?.interaction_id ?? (req.interactionId || null),
      rank: attribution.rank,
      offer_id: attribution.offerId,
      creative_id: attribution.creativeId,
      channel_id: attribution.channelId,
      placement_id: attribution.placementId,
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
      occurred_at: req.timestamp ? timestampDate(req.timestamp) : at,
    });
    // Lost the race to a concurrent call with the same key: that call's record stands.
    if (!row) return this.replay(this.remember(recentKey, (await this.store.byKey(ctx.tenantId, idempotencyKey))!, compiled), hash);
    this.remember(recentKey, row, compiled);
    // The record is committed; a retry would only replay it. So a learning failure (Redis down) is
    // logged for the operator rather than answered as an error the client cannot fix by retrying.
    await this.learn(ctx.tenantId, compiled, row, category, status).catch((err) =>
      this.logger.error({ err, recordId: row.id }, "outcome recorded but not learned: counters unavailable"),
    );
    return toRecord(row, status);
  }

  private remember(key: string, row: OutcomeRow, under: CompiledTenant): OutcomeRow {
    this.recent.delete(key);
    this.recent.set(key, { row, under });
    if (this.recent.size > RECENT_RECORDS) this.recent.delete(this.recent.keys().next().value!);
    return row;
  }

  private replay(earlier: OutcomeRow, hash: string): RespondResponse {
    if (earlier.payload_hash !== hash) {
      this.logger.warn({ idempotencyKey: earlier.idempotency_key, recordId: earlier.id }, "idempotency key replayed with a different payload; the original record stands");
    }
    return toRecord(earlier, "already_recorded");
  }

  private validate(req: RespondRequest, idempotencyKey: string, compiled: CompiledTenant): { outcome: string; category: string } {
    const violations: FieldViolation[] = [];
    const outcome = text(req.outcome || req.interactionType);
    if (!idempotencyKey) violations.push({ field: "idempotencyKey", message: "is required (in the body or the Idempotency-Key header)" });
    else if (idempotencyKey.length > MAX_TEXT) violations.push({ field: "idempotencyKey", message: `must be at most ${MAX_TEXT} characters` });
    if (!text(req.customerId)) violations.push({ field: "customerId", message: "is required" });
    else if (req.customerId.length > MAX_TEXT) violations.push({ field: "customerId", message: `must be at most ${MAX_TEXT} characters` });
    const category = compiled.outcomeTypes.get(outcome);
    if (!outcome) violations.push({ field: "outcome", message: "is required" });
    else if (!category) violations.push({ field: "outcome", message: `unknown outcome type ${outcome}` });
    if (!req.creativeId) {
      if (!req.recommendationId && !req.interactionId) violations.push({ field: "recommendationId", message: "is required unless creativeId is given" });
      if (req.rank === undefined) violations.push({ field: "rank", message: "is required unless creativeId is given" });
    }
    if (req.rank !== undefined && req.rank < 1) violations.push({ field: "rank", message: "must be at least 1" });
    if (req.direction && !DIRECTIONS.includes(req.direction)) violations.push({ field: "direction", message: "must be inbound or outbound" });
    if (req.conversionValue !== undefined && !Number.isFinite(req.conversionValue)) violations.push({ field: "conversionValue", message: "must be a finite number" });
    if (req.responseTime !== undefined && !(req.responseTime >= 0)) violations.push({ field: "responseTime", message: "must be a number of milliseconds" });
    for (const field of ["offerId", "channelId", "placementId"] as const) {
      if (req[field] && !isUuid(req[field])) violations.push({ field, message: "must be an id" });
    }
    if (violations.length) throw invalidFields(violations);
    return { outcome, category: category! };
  }

  /**
   * The ladder of spec 4.4, first match wins: (1) the stored recommendation plus rank; (2) a legacy
   * interaction id inside a stored recommendation plus rank; (3) the customer's most recent
   * recommendation with that rank. A creativeId resolves offer, channel and placement directly.
   */
  private async attribute(tenantId: string, customerId: string, req: RespondRequest, compiled: CompiledTenant): Promise<Attribution> {
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

  /**
   * First writes only: a positive outcome is a success for the offer's adaptive evidence (when the
   * customer saw the offer within the lookback); a negative one is kept for suppression; a
   * conversion adds to the conversion and spend counters of the budgets over the offer.
   */
  private async learn(tenantId: string, compiled: CompiledTenant, row: OutcomeRow, category: string, status: Status): Promise<void> {
    if (category === "positive" && status === "recorded") {
      await this.counters.evidence.addSuccess(tenantId, adaptiveCountKey(row.offer_id, row.context_bucket));
    }
    if (category === "negative") {
      await this.counters.negatives.record(tenantId, row.customer_id, { offerId: row.offer_id, outcome: row.outcome, at: row.occurred_at.toISOString() });
    }
    const offer = compiled.snapshot.offers.find((o) => o.id === row.offer_id);
    if (!offer || !isConversion(row, category)) return;
    const increments: CounterIncrement[] = [];
    const now = Date.now();
    for (const budget of compiled.snapshot.budgets) {
      for (const check of budgetChecks(budget, offer, row.channel_id, now)) {
        if (check.kind === "budget_conversions") increments.push({ key: check.key, by: 1, ttlSeconds: check.ttlSeconds });
        if (check.kind === "budget_spend" && budget.costPerConversion) increments.push({ key: check.key, by: toMicros(budget.costPerConversion), ttlSeconds: check.ttlSeconds });
      }
    }
    await this.counters.reservations.increment(tenantId, increments);
  }
}

/** A conversion: the `conversion` outcome, or any positive outcome that carries a value. */
function isConversion(row: OutcomeRow, category: string): boolean {
  return row.outcome === "conversion" || (category === "positive" && (row.conversion_value ?? 0) > 0);
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

/** attributes merged into context, explicit context keys winning; the names of 2.5 beside them. */
function storedContext(req: RespondRequest): JsonObject {
  const names: JsonObject = {};
  if (req.channel) names.channel = req.channel;
  if (req.placement) names.placement = req.placement;
  if (req.deviceType) names.deviceType = req.deviceType;
  return { ...(req.attributes ?? {}), ...names, ...(req.context ?? {}) };
}

/** The request as its sender wrote it (unset fields omitted), for spotting a replay that differs. */
function payloadHash(req: RespondRequest): string {
  return createHash("sha256").update(canonicalize(toJson(RespondRequestSchema, req))!).digest("hex");
}

/**
 * Bulk items without a key get one derived from their own fields only (never from what the server
 * fills in, such as a defaulted timestamp), so a retried batch replays instead of duplicating.
 */
export function defaultIdempotencyKey(item: RespondRequest): string {
  return `bulk:${payloadHash(item)}`;
}

function toRecord(row: OutcomeRow, status: Status): RespondResponse {
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

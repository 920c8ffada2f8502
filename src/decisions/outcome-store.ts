import type { Sequelize } from "sequelize";
import { preparedRows } from "../platform/db.js";
import { KeyedGroupCommit } from "../platform/group-commit.js";
import { isUuid } from "../platform/ids.js";

/** An outcome as stored in interactions (the first write of its idempotency key). */
export interface OutcomeRow {
  id: string;
  customer_id: string;
  recommendation_id: string | null;
  interaction_id: string | null;
  rank: number | null;
  offer_id: string;
  creative_id: string | null;
  channel_id: string | null;
  placement_id: string | null;
  outcome: string;
  direction: string;
  context_bucket: string;
  idempotency_key: string;
  status: string;
  payload_hash: string;
  context: Record<string, unknown>;
  outcome_details: Record<string, unknown>;
  conversion_value: number | null;
  response_time: number | null;
  occurred_at: Date;
  created_at: Date;
}

/** One offer of a stored recommendation, as Recommend wrote it. */
export interface StoredOffer {
  rank: number;
  offerId: string;
  creativeId: string | null;
  channelId: string | null;
  placementId: string | null;
  bucket?: string;
}

/** Where an offer was shown: the recommendation (when there was one) and when. */
export interface ShownIn {
  recommendationId: string | null;
  interactionId: string | null;
  at: Date;
}

/** An impression row (Recommend's own, or one recorded through Respond), in a recommendation's offer shape. */
export type StoredImpression = StoredOffer & ShownIn;

/** An exposure the adaptation lookback found: a recommended offer, or an impression row. */
export interface RecentExposure {
  bucket: string | null;
  recommendationId: string | null;
  rank: number | null;
  impressionId: string | null;
}

export interface StoredRecommendation {
  id: string;
  customer_id: string;
  interaction_id: string | null;
  offers: StoredOffer[];
  created_at: Date;
}

const OUTCOME_COLUMNS = [
  "id", "customer_id", "recommendation_id", "interaction_id", "rank", "offer_id", "creative_id", "channel_id", "placement_id",
  "outcome", "direction", "context_bucket", "idempotency_key", "status", "payload_hash", "context", "outcome_details",
  "conversion_value", "response_time", "occurred_at",
] as const;
/** Named, not `*`: a prepared statement's result columns must not change under it (a later migration). */
const RETURNED = [...OUTCOME_COLUMNS, "created_at"].join(", ");
/** Each column's type, as `insertMany` reads it from JSON. */
const OUTCOME_COLUMN_TYPES: Record<(typeof OUTCOME_COLUMNS)[number], string> = {
  id: "uuid", customer_id: "text", recommendation_id: "uuid", interaction_id: "uuid", rank: "int", offer_id: "uuid",
  creative_id: "uuid", channel_id: "uuid", placement_id: "uuid", outcome: "text", direction: "text", context_bucket: "text",
  idempotency_key: "text", status: "text", payload_hash: "text", context: "jsonb", outcome_details: "jsonb",
  conversion_value: "float8", response_time: "float8", occurred_at: "timestamptz",
};

/** One outcome as Respond stores it. */
export interface OutcomeWrite {
  tenantId: string;
  row: Omit<OutcomeRow, "created_at">;
}

/**
 * Respond's reads and writes: the ladder's lookups and the exactly-once insert. Tenant first. Each
 * is a named prepared statement (preparedRows): Respond is a hot path too.
 */
export class OutcomeStore {
  /**
   * Respond looks its recommendation up by id: while two lookups of a tenant run, the ones that
   * arrive wait and go as one statement (one round trip and one socket write for the batch, about a
   * fifth of a fresh Respond's CPU when each went alone). An idle service reads each at once.
   */
  private readonly byId = new KeyedGroupCommit<string, StoredRecommendation | null>((tenantId, ids) => this.recommendationsById(tenantId, ids), {
    maxInFlight: 2,
  });

  constructor(private readonly db: Sequelize) {}

  async byKey(tenantId: string, key: string): Promise<OutcomeRow | null> {
    const [row] = await preparedRows<OutcomeRow>(
      this.db,
      "outcome-by-key",
      `SELECT ${RETURNED} FROM interactions WHERE tenant_id = $1 AND idempotency_key = $2`,
      [tenantId, key],
    );
    return row ?? null;
  }

  /** The unique index decides: null when the key was already taken, even by a concurrent call. */
  async insert(tenantId: string, row: Omit<OutcomeRow, "created_at">): Promise<OutcomeRow | null> {
    return (await this.insertMany([{ tenantId, row }]))[0];
  }

  /**
   * Several outcomes in one statement (group commit, outcome-writer.ts): the batch as one JSON
   * parameter taken apart by json_to_recordset, so one prepared statement serves every batch size
   * and pg quotes no array literals in JavaScript. Results in the batch's order; null where the
   * key was already taken, by an earlier call or by an earlier outcome of the same batch (rows are
   * matched by their own ids).
   */
  async insertMany(batch: OutcomeWrite[]): Promise<Array<OutcomeRow | null>> {
    const stored = await preparedRows<OutcomeRow>(
      this.db,
      "outcome-insert-many-json",
      `INSERT INTO interactions (tenant_id, ${OUTCOME_COLUMNS.join(", ")}, created_at)
       SELECT w."tenantId", ${OUTCOME_COLUMNS.map((c) => `r.${c}`).join(", ")}, now()
       FROM json_to_recordset($1::json) AS w("tenantId" uuid, row json),
         json_to_record(w.row) AS r(${OUTCOME_COLUMNS.map((c) => `${c} ${OUTCOME_COLUMN_TYPES[c]}`).join(", ")})
       ON CONFLICT (tenant_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING RETURNING ${RETURNED}`,
      [JSON.stringify(batch)],
    );
    const byId = new Map(stored.map((r) => [r.id, r]));
    return batch.map(({ row }) => byId.get(row.id) ?? null);
  }

  async recommendation(tenantId: string, id: string): Promise<StoredRecommendation | null> {
    // A batch is one statement: an id PostgreSQL cannot read as a uuid would fail the others with it.
    if (!isUuid(id)) return null;
    return this.byId.submit(tenantId, id);
  }

  /** The tenant's recommendations with these ids, in their order; null where there is none. */
  private async recommendationsById(tenantId: string, ids: string[]): Promise<Array<StoredRecommendation | null>> {
    const rows = await preparedRows<StoredRecommendation>(
      this.db,
      "recommendations-by-ids",
      `SELECT id, customer_id, interaction_id, offers, created_at FROM recommendations WHERE tenant_id = $1 AND id = ANY($2::uuid[])`,
      [tenantId, ids],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  /** Legacy clients send the interaction id a single-flow recommendation carried. */
  async recommendationByInteraction(tenantId: string, interactionId: string): Promise<StoredRecommendation | null> {
    const [row] = await preparedRows<StoredRecommendation>(
      this.db,
      "recommendation-by-interaction_id",
      `SELECT id, customer_id, interaction_id, offers, created_at FROM recommendations WHERE tenant_id = $1 AND interaction_id = $2`,
      [tenantId, interactionId],
    );
    return row ?? null;
  }

  /** The customer's most recent recommendation that had an offer at `rank`. */
  async latestWithRank(tenantId: string, customerId: string, rank: number): Promise<StoredRecommendation | null> {
    const [row] = await preparedRows<StoredRecommendation>(
      this.db,
      "recommendation-latest-with-rank",
      `SELECT id, customer_id, interaction_id, offers, created_at FROM recommendations
       WHERE tenant_id = $1 AND customer_id = $2 AND offers @> jsonb_build_array(jsonb_build_object('rank', $3::int))
       ORDER BY created_at DESC LIMIT 1`,
      [tenantId, customerId, rank],
    );
    return row ?? null;
  }

  /**
   * The customer's most recent impression row at `rank`, whichever impression-category outcome
   * (`impressionOutcomes`) it was recorded as. Served by interactions_customer_rank (0007).
   */
  async latestImpressionWithRank(tenantId: string, customerId: string, rank: number, impressionOutcomes: readonly string[]): Promise<StoredImpression | null> {
    const [row] = await preparedRows<StoredImpression>(
      this.db,
      "impression-latest-with-rank",
      `SELECT rank, offer_id AS "offerId", creative_id AS "creativeId", channel_id AS "channelId", placement_id AS "placementId",
         context_bucket AS bucket, recommendation_id AS "recommendationId", interaction_id AS "interactionId",
         COALESCE(occurred_at, created_at) AS at
       FROM interactions WHERE tenant_id = $1 AND customer_id = $2 AND rank = $3 AND outcome = ANY($4::text[])
       ORDER BY created_at DESC LIMIT 1`,
      [tenantId, customerId, rank, impressionOutcomes],
    );
    return row ?? null;
  }

  /**
   * The customer's latest exposure to the offer since `since` (a recommendation or an impression
   * row of any of `impressionOutcomes`), or null when there was none: the 30-day adaptation test.
   * `bucket` is its context bucket; `recommendationId` and `rank` name a recommended offer (the
   * impression rows a recommendation wrote are that offer too), `impressionId` an impression row
   * recorded without one.
   */
  async recentExposure(tenantId: string, customerId: string, offerId: string, since: Date, impressionOutcomes: readonly string[]): Promise<RecentExposure | null> {
    const [row] = await preparedRows<RecentExposure>(
      this.db,
      "recent-exposure",
      `SELECT bucket, recommendation_id AS "recommendationId", rank, impression_id AS "impressionId" FROM (
         SELECT context_bucket AS bucket, recommendation_id, rank, CASE WHEN recommendation_id IS NULL THEN id END AS impression_id,
           COALESCE(occurred_at, created_at) AS at FROM interactions
         WHERE tenant_id = $1 AND customer_id = $2 AND offer_id = $3::uuid AND outcome = ANY($6::text[]) AND COALESCE(occurred_at, created_at) >= $4
         UNION ALL
         SELECT o->>'bucket', r.id, (o->>'rank')::int, NULL::uuid, r.created_at FROM recommendations r, jsonb_array_elements(r.offers) o
         WHERE r.tenant_id = $1 AND r.customer_id = $2 AND r.created_at >= $4 AND o->>'offerId' = $5
       ) exposures ORDER BY at DESC LIMIT 1`,
      [tenantId, customerId, offerId, since, offerId, impressionOutcomes],
    );
    return row ?? null;
  }
}

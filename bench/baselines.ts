/**
 * The storage baselines, driven from the benchmark process against the service's own PostgreSQL
 * database and Redis, through the service's own code where it has one:
 *
 * - `insert`: one bare impression row, `INSERT INTO interactions ...`, through a sequelize pool of
 *   the service's size (createSequelize: max 10).
 * - `write`: what Recommend writes before answering, through the service's own
 *   DecisionStore.saveRecommendation (the recommendation row and three impression rows).
 * - `redis`: the contact-policy round trip, the reservation store's `read` (one MGET of four keys)
 *   followed by its `reserve` (one EVALSHA of the reservation script: one group of two keys).
 */
import { randomUUID } from "node:crypto";
import type { Sequelize } from "sequelize";
import { createSequelize } from "../src/platform/db.js";
import { createRedis, connectRedis, type Redis } from "../src/platform/redis.js";
import { createRedisReservationStore } from "../src/decisions/reservation-store.js";
import { DecisionStore } from "../src/decisions/decision-store.js";
import type { Call } from "./load.js";

export interface Baselines {
  insert: Call;
  write: Call;
  redis: Call;
  close(): Promise<void>;
}

export async function openBaselines(o: { databaseUrl: string; redisUrl: string; redisKeyPrefix: string; tenantId: string; offerIds: string[] }): Promise<Baselines> {
  const db: Sequelize = createSequelize(o.databaseUrl);
  const redis: Redis = createRedis(o.redisUrl, o.redisKeyPrefix);
  await connectRedis(redis);
  const counters = createRedisReservationStore(redis);
  const store = new DecisionStore(db);
  const offer = (i: number) => o.offerIds[i % o.offerIds.length];

  const insert: Call = (i) =>
    db.query(
      `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, interaction_id, rank, offer_id, creative_id,
         channel_id, placement_id, outcome, direction, context_bucket)
       VALUES ($1, $2, $3, $4, $5, 1, $6, NULL, NULL, NULL, 'impression', 'outbound', '*')`,
      { bind: [o.tenantId, randomUUID(), `baseline-${i % 2000}`, randomUUID(), randomUUID(), offer(i)] },
    );

  const write: Call = (i) => {
    const id = randomUUID();
    const interactionId = randomUUID();
    const ranked = [0, 1, 2].map((r) => ({ rank: r + 1, offerId: offer(i + r), creativeId: null, channelId: null, placementId: null, score: 0.5 }));
    return store.saveRecommendation(
      o.tenantId,
      { id, customer_id: `baseline-${i % 2000}`, flow_id: null, interaction_id: interactionId, channel_id: null, multi_placement: false, offers: ranked, context: { hour: 12 }, scored_by: ["default-adaptive"], experiment_id: null, experiment_variant: null,
        qualified_count: 3, suppressed_count: 0, degraded_scoring: false },
      ranked.map((r) => ({ id: randomUUID(), rank: r.rank, offer_id: r.offerId, creative_id: null, channel_id: null, placement_id: null, context_bucket: "*" })),
    );
  };

  const redisRoundTrip: Call = async (i) => {
    const customer = `baseline-${i % 2000}`;
    const window = Math.floor(Date.now() / 86_400_000);
    const keys = [
      `fc:${customer}:offer:${offer(i)}:86400s:${window}`,
      `fc:${customer}:category:cards:86400s:${window}`,
      `bg:offer%3A${offer(i)}:impressions`,
      `bg:global:spend`,
    ];
    await counters.read(o.tenantId, keys);
    await counters.reserve(o.tenantId, [
      [
        { key: keys[0], limit: 1_000_000_000, increment: 1, ttlSeconds: 86_400 },
        { key: keys[2], limit: 1_000_000_000, increment: 1 },
      ],
    ]);
  };

  return {
    insert,
    write,
    redis: redisRoundTrip,
    async close() {
      redis.disconnect();
      await db.close();
    },
  };
}

/**
 * The floor: what a Recommend costs on this stack when its decision costs nothing. A grpc-js
 * server, in its own process, that serves `decisioning.v1.DecisionService/Recommend` doing only
 * the work the spec requires around a decision, the way the service does it:
 * - decodes the request with the service's descriptors and server options, and checks the
 *   `x-api-key` header against one key held in memory (the service's key cache, without its HMAC);
 * - writes the decision's recommendation and three impression rows through the service's own
 *   group commit (RecommendationWriter, DecisionStore) and counts the decision and its three
 *   offers' trials with the service's Redis counter (one script for the decisions that wait
 *   together), both before it answers, as Respond must be able to attribute at once;
 * - queues the decision's trace row (sample rate 1.0) on the service's TraceWriter, which writes
 *   it after the answer with the others.
 * Its rows are copies of one decision the service stored, FLOOR_TEMPLATE_ID (new ids, the
 * request's customer), so they are as wide as the service's and land in the same tables and
 * indexes. What it leaves out is the decision: reading the input, qualifying, applying contact
 * policies, scoring 200 offers, ranking, and building and serializing the trace record.
 *
 * The bench compares it with the echo server and the service in one run (docs/performance.md):
 * floor / echo is the most any implementation of the decision on this stack could reach.
 *
 * Env: DATABASE_URL, REDIS_URL, REDIS_KEY_PREFIX, FLOOR_TENANT_ID, FLOOR_API_KEY and
 * FLOOR_TEMPLATE_ID. Prints one JSON line {"grpcPort": n} once listening; stops on SIGTERM.
 */
import * as grpc from "@grpc/grpc-js";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Redis } from "ioredis";
import { RecommendResponseSchema, type RecommendRequest, type RecommendResponse } from "../gen/decisioning/v1/decisions_pb.js";
import { DecisionStore, type ImpressionRow, type RecommendationRow, type SerializedTrace } from "../src/decisions/decision-store.js";
import { RecommendationWriter } from "../src/decisions/recommendation-writer.js";
import { TraceWriter } from "../src/decisions/trace-writer.js";
import { adaptiveCountKey, type SnapshotConfig } from "../src/core/index.js";
import { createRedisDecisionCounter } from "../src/decisions/decision-counter.js";
import { createLogger } from "../src/platform/logger.js";
import { createSequelize, selectRows } from "../src/platform/db.js";
import { newId } from "../src/platform/ids.js";
import { serveRecommend } from "./recommend-server.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`bench/floor-server.ts needs ${name}`);
  return value;
};
const tenantId = env("FLOOR_TENANT_ID");
const apiKey = env("FLOOR_API_KEY");
const db = createSequelize(env("DATABASE_URL"));
const store = new DecisionStore(db);
const writer = new RecommendationWriter(store);
const traces = new TraceWriter(store, createLogger("warn", 2));
const redis = new Redis(env("REDIS_URL"), { keyPrefix: env("REDIS_KEY_PREFIX") });
const counter = createRedisDecisionCounter(redis);

// --- the template: a decision the service stored ----------------------------------------------------
const [last] = await selectRows<RecommendationRow & { tenant_id: string }>(db, "SELECT * FROM recommendations WHERE tenant_id = $1 AND id = $2", [
  tenantId,
  env("FLOOR_TEMPLATE_ID"),
]);
if (!last) throw new Error("FLOOR_TEMPLATE_ID names no recommendation of FLOOR_TENANT_ID");
const { tenant_id: _tenant, created_at: _createdAt, ...rec } = last;
const impressions = await selectRows<ImpressionRow>(
  db,
  `SELECT id, rank, offer_id, creative_id, channel_id, placement_id, context_bucket FROM interactions
   WHERE tenant_id = $1 AND recommendation_id = $2 AND outcome = 'impression' ORDER BY rank`,
  [tenantId, rec.id],
);
const [trace] = await selectRows<SerializedTrace>(db, "SELECT * FROM decision_traces WHERE tenant_id = $1 AND recommendation_id = $2", [tenantId, rec.id]);
if (!trace) throw new Error("the floor copies a decision with its trace: FLOOR_TEMPLATE_ID's has none (traces off?)");
// Already stored by the service; the writer stores it once more (ON CONFLICT DO NOTHING) as it would its own.
const policy = (await store.policy(tenantId, trace.policy_version_hash)) as SnapshotConfig;
const trialKeys = impressions.map((i) => adaptiveCountKey(i.offer_id, i.context_bucket));
const offers = impressions.map((i) => ({ rank: i.rank, offerId: i.offer_id, offerName: `bench-offer-${i.rank}`, score: 0.5, propensity: 0.5, propensitySource: "adaptation" }));

async function recommend(request: RecommendRequest): Promise<RecommendResponse> {
  const id = newId();
  const interactionId = newId();
  const [createdAt] = await Promise.all([
    writer.save({
      tenantId,
      rec: { ...rec, id, customer_id: request.customerId, interaction_id: interactionId },
      impressions: impressions.map((i) => ({ ...i, id: newId() })),
    }),
    counter.countDecision(tenantId, null, trialKeys),
  ]);
  traces.enqueueSerialized({ ...trace, id: newId(), recommendation_id: id, customer_id: request.customerId, created_at: createdAt, policy });
  return create(RecommendResponseSchema, { recommendationId: id, interactionId, customerId: request.customerId, offers, createdAt: timestampFromDate(createdAt) });
}

serveRecommend(
  (call, callback) => {
    if (call.metadata.get("x-api-key")[0] !== apiKey) return callback({ code: grpc.status.UNAUTHENTICATED, details: "invalid API key" });
    recommend(call.request).then(
      (response) => callback(null, response),
      (err: Error) => callback({ code: grpc.status.INTERNAL, details: err.message }),
    );
  },
  () => traces.close().finally(() => Promise.all([db.close(), redis.quit()])),
);

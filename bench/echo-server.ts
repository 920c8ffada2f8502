/**
 * The gRPC baseline: a tiny grpc-js server, in its own process, that serves
 * `decisioning.v1.DecisionService/Recommend` with an echo handler. It decodes the request with the
 * same protobuf-es descriptors the service uses and answers at once with a fixed three-offer
 * response carrying the request's customerId, so that the same client code drives it and the real
 * service, and the difference is what the service does per call.
 *
 * With ROUND_TRIP_DATABASE_URL and ROUND_TRIP_REDIS_URL it is the round-trip baseline instead: before
 * each answer it sends `SELECT 1` to PostgreSQL (a prepared statement, node-postgres, two
 * connections) and `PING` to Redis (ioredis), in parallel, and answers when both have come back.
 * That is the least any Recommend that must hear from PostgreSQL and Redis before it answers can
 * cost on this stack and machine, whatever it writes and decides: its latency at a fixed rate is
 * the floor of the service's.
 *
 * Prints one JSON line {"grpcPort": n} once listening; stops on SIGTERM. The benchmark starts it
 * with bench/probe.mjs preloaded, which measures its event loop and stops it if the benchmark dies.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { Redis } from "ioredis";
import pg from "pg";
import { RecommendResponseSchema, type RecommendRequest, type RecommendResponse } from "../gen/decisioning/v1/decisions_pb.js";
import { serveRecommend } from "./recommend-server.js";

const offers = [1, 2, 3].map((rank) => ({
  rank,
  offerId: `00000000-0000-4000-8000-00000000000${rank}`,
  offerName: `bench-offer-${rank}`,
  score: 0.5,
  propensity: 0.5,
  propensitySource: "cold_start",
}));
const createdAt = timestampFromDate(new Date());

const answer = (request: RecommendRequest): RecommendResponse =>
  create(RecommendResponseSchema, {
    recommendationId: "00000000-0000-4000-8000-000000000000",
    interactionId: "00000000-0000-4000-8000-000000000000",
    customerId: request.customerId,
    offers,
    degraded: false,
    createdAt,
  });

const databaseUrl = process.env.ROUND_TRIP_DATABASE_URL;
const redisUrl = process.env.ROUND_TRIP_REDIS_URL;
if (!databaseUrl !== !redisUrl) throw new Error("bench/echo-server.ts: the round-trip baseline needs both ROUND_TRIP_DATABASE_URL and ROUND_TRIP_REDIS_URL");
if (databaseUrl && redisUrl) {
  const db = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const redis = new Redis(redisUrl);
  const selectOne = { name: "round-trip", text: "SELECT 1" };
  serveRecommend(
    (call, callback) => {
      Promise.all([db.query(selectOne), redis.ping()]).then(
        () => callback(null, answer(call.request)),
        (err: Error) => {
          // h2load counts a gRPC error as a success, and a quick error would pass for a fast round
          // trip: a baseline that cannot reach PostgreSQL or Redis stops, and its lane shows failures.
          console.error(`bench/echo-server.ts: round trip failed: ${err.message}`);
          process.exit(1);
        },
      );
    },
    () => Promise.all([db.end(), redis.quit()]),
  );
} else {
  serveRecommend((call, callback) => callback(null, answer(call.request)));
}

/**
 * The gRPC baseline: a tiny grpc-js server, in its own process, that serves
 * `decisioning.v1.DecisionService/Recommend` with an echo handler. It decodes the request with the
 * same protobuf-es descriptors the service uses and answers at once with a fixed three-offer
 * response carrying the request's customerId, so that the same client code drives it and the real
 * service, and the difference is what the service does per call.
 *
 * Prints one JSON line {"grpcPort": n} once listening; stops on SIGTERM. The benchmark starts it
 * with bench/probe.mjs preloaded, which measures its event loop and stops it if the benchmark dies.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { RecommendResponseSchema } from "../gen/decisioning/v1/decisions_pb.js";
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

serveRecommend((call, callback) => {
  callback(
    null,
    create(RecommendResponseSchema, {
      recommendationId: "00000000-0000-4000-8000-000000000000",
      interactionId: "00000000-0000-4000-8000-000000000000",
      customerId: call.request.customerId,
      offers,
      degraded: false,
      createdAt,
    }),
  );
});

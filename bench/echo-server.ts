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
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  RecommendRequestSchema,
  RecommendResponseSchema,
  type RecommendRequest,
  type RecommendResponse,
} from "../gen/decisioning/v1/decisions_pb.js";
import { GRPC_SERVER_OPTIONS } from "../src/transport/grpc-options.js";

const offers = [1, 2, 3].map((rank) => ({
  rank,
  offerId: `00000000-0000-4000-8000-00000000000${rank}`,
  offerName: `bench-offer-${rank}`,
  score: 0.5,
  propensity: 0.5,
  propensitySource: "cold_start",
}));
const createdAt = timestampFromDate(new Date());

const server = new grpc.Server(GRPC_SERVER_OPTIONS);
server.addService(
  {
    recommend: {
      path: "/decisioning.v1.DecisionService/Recommend",
      requestStream: false,
      responseStream: false,
      requestSerialize: (m: RecommendRequest) => Buffer.from(toBinary(RecommendRequestSchema, m)),
      requestDeserialize: (b: Buffer) => fromBinary(RecommendRequestSchema, b),
      responseSerialize: (m: RecommendResponse) => Buffer.from(toBinary(RecommendResponseSchema, m)),
      responseDeserialize: (b: Buffer) => fromBinary(RecommendResponseSchema, b),
    },
  },
  {
    recommend: (call: grpc.ServerUnaryCall<RecommendRequest, RecommendResponse>, callback: grpc.sendUnaryData<RecommendResponse>) => {
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
    },
  },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    console.error(err);
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({ grpcPort: port }) + "\n");
});
process.once("SIGTERM", () => {
  server.forceShutdown();
  process.exit(0);
});

import * as grpc from "@grpc/grpc-js";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  RecommendRequestSchema,
  RecommendResponseSchema,
  type RecommendRequest,
  type RecommendResponse,
} from "../gen/decisioning/v1/decisions_pb.js";
import { GRPC_SERVER_OPTIONS } from "../src/transport/grpc-options.js";

/**
 * The bench's own servers (the echo server, the floor): a grpc-js server with the service's
 * options that serves `decisioning.v1.DecisionService/Recommend` alone, decoding and encoding with
 * the service's descriptors. Prints one JSON line {"grpcPort": n} once listening, as the service
 * does, and stops on SIGTERM after `onStop`.
 */
export function serveRecommend(recommend: grpc.handleUnaryCall<RecommendRequest, RecommendResponse>, onStop: () => Promise<unknown> = async () => {}): void {
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
    { recommend },
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
    void onStop().finally(() => process.exit(0));
  });
}

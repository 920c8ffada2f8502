import type { ServerOptions } from "@grpc/grpc-js";

/**
 * Options of every grpc-js server we run: the service, and the bench's echo baseline, so that the
 * baseline stays a like-for-like door. Channelz keeps per-call statistics for a channelz service we
 * do not expose; turning it off saved about 8% of the service's CPU per Recommend in
 * alternated runs (docs/performance.md).
 */
export const GRPC_SERVER_OPTIONS: ServerOptions = { "grpc.enable_channelz": 0 };

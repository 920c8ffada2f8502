/**
 * The lightest Node client we have for requests that must differ from each other (h2load sends
 * one body per run): node:http2 sending pre-framed gRPC messages, no grpc-js channel, no
 * interceptors. Its own CPU per call is measured (process CPU over the lane) and reported beside
 * the figures it drives, so a reader sees how much of the machine it took.
 */
import { connect, constants, type ClientHttp2Session } from "node:http2";
import { grpcFrame } from "./h2load.js";

export interface GrpcH2Client {
  /** One unary call with an already serialized message; rejects on a non-zero grpc-status. */
  call(path: string, message: Uint8Array): Promise<void>;
  close(): void;
}

/** `connections` HTTP/2 connections, used in turn. */
export function grpcH2Client(port: number, headers: Record<string, string>, connections = 2): GrpcH2Client {
  const sessions: ClientHttp2Session[] = Array.from({ length: connections }, () => connect(`http://127.0.0.1:${port}`));
  for (const s of sessions) s.on("error", () => {});
  let turn = 0;
  return {
    call(path, message) {
      return new Promise((resolve, reject) => {
        const stream = sessions[turn++ % sessions.length].request({
          [constants.HTTP2_HEADER_METHOD]: "POST",
          [constants.HTTP2_HEADER_PATH]: path,
          "content-type": "application/grpc",
          te: "trailers",
          ...headers,
        });
        let status: string | undefined;
        stream.on("response", (h) => (status = h["grpc-status"] as string | undefined));
        stream.on("trailers", (t) => (status = (t["grpc-status"] as string | undefined) ?? status));
        stream.on("data", () => {});
        stream.on("error", reject);
        stream.on("close", () => (status === "0" ? resolve() : reject(new Error(`grpc-status ${status ?? "missing"}`))));
        stream.end(grpcFrame(message));
      });
    },
    close: () => sessions.forEach((s) => s.close()),
  };
}

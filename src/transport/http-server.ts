import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttp2Server, type Http2Session } from "node:http2";
import type { Socket } from "node:net";
import type { DescFile } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { Gateway } from "./gateway.js";
import { RestTranscoder } from "./rest.js";
import { sendError } from "./http-io.js";
import { CONNECT_PREFIX, createConnectHandler } from "./connect.js";
import { registerConnectReflection } from "./connect-reflection.js";
import { toAppError } from "./error-mapping.js";
import { findHttpRoute, type HttpRoute } from "./http-routes.js";

export type HealthCheck = () => Promise<Record<string, "ok" | "down">>;

/** How long a new connection may stay silent before its first bytes. */
const SNIFF_TIMEOUT_MS = 30_000;

/** The HTTP/2 connection preface starts with these bytes; no HTTP/1 request line does. */
const H2_PREFACE = Buffer.from("PRI * HTTP/2.0");

/**
 * One listener for two doors: Connect methods at /api/v1/<package.Service>/<Method>, the spec's REST
 * paths for everything else, and GET /healthz for load balancers. It speaks HTTP/1.1 and HTTP/2 with
 * prior knowledge (h2c) on the same port, told apart by the connection's first bytes, because
 * `buf curl http://host:port/api/v1/...` uses h2c and resolves the schema by server reflection
 * (a bidi stream, which Connect serves only over HTTP/2). `routes` are the doors outside protobuf
 * (http-routes.ts); they are matched before Connect and REST.
 */
export function createHttpServer(
  gateway: Gateway,
  health: HealthCheck,
  reflectionFiles: DescFile[] = [],
  routes: readonly HttpRoute[] = [],
): Server {
  const rest = new RestTranscoder(gateway);
  const connect = createConnectHandler(gateway);
  const reflection = connectNodeAdapter({
    requestPathPrefix: CONNECT_PREFIX,
    routes: (router) => registerConnectReflection(router, gateway.registrations.map((r) => r.service), reflectionFiles),
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const pathname = (req.url ?? "/").split("?")[0];
    if (pathname === "/healthz" && req.method === "GET") {
      health().then(
        (checks) => {
          const ok = Object.values(checks).every((c) => c === "ok");
          res.writeHead(ok ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify({ status: ok ? "ok" : "unavailable", checks }));
        },
        () => res.writeHead(503, { "content-type": "application/json" }).end(JSON.stringify({ status: "unavailable" })),
      );
      return;
    }
    if (pathname.startsWith(`${CONNECT_PREFIX}/grpc.reflection.`)) return reflection(req, res);
    const route = findHttpRoute(routes, pathname, req);
    if (route) {
      route.handle(req, res).catch((err) => sendError(res, toAppError(err, gateway.logger), "problem", ""));
      return;
    }
    const door = connect.serves(pathname) ? connect : rest;
    door.handle(req, res).catch((err) => sendError(res, toAppError(err, gateway.logger), "problem", ""));
  };

  const http1 = createServer(handle);
  const http2 = createHttp2Server({}, handle as never);
  const sessions = new Set<Http2Session>();
  http2.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });

  // Take over connection handling: sniff the first bytes, then hand the socket to the right server.
  const http1Listeners = http1.listeners("connection") as Array<(socket: Socket) => void>;
  http1.removeAllListeners("connection");
  http1.on("connection", (socket: Socket) => {
    // A connection that never says which protocol it speaks is dropped rather than held forever.
    socket.setTimeout(SNIFF_TIMEOUT_MS, () => socket.destroy());
    let seen = Buffer.alloc(0);
    const sniff = (chunk: Buffer) => {
      seen = Buffer.concat([seen, chunk]);
      const n = Math.min(seen.length, H2_PREFACE.length);
      const h2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
      if (h2 && seen.length < H2_PREFACE.length) return; // a partial preface: wait for more
      socket.off("data", sniff);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(seen);
      // HTTP/2 drains the buffered bytes itself and then reads the handle; resuming would lose them.
      if (h2) http2.emit("connection", socket);
      else {
        for (const listener of http1Listeners) listener.call(http1, socket);
        socket.resume();
      }
    };
    socket.on("data", sniff);
  });

  // Draining must reach HTTP/2 sessions too, which the HTTP/1 server does not track.
  const closeIdle = http1.closeIdleConnections.bind(http1);
  const closeAll = http1.closeAllConnections.bind(http1);
  http1.closeIdleConnections = () => {
    closeIdle();
    for (const session of sessions) session.close();
  };
  http1.closeAllConnections = () => {
    closeAll();
    for (const session of sessions) session.destroy();
  };
  return http1;
}

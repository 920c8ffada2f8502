import { createServer, type Server } from "node:http";
import type { Gateway } from "./gateway.js";
import { RestTranscoder } from "./rest.js";
import { sendError } from "./http-io.js";
import { createConnectHandler } from "./connect.js";
import { toAppError } from "./error-mapping.js";

export type HealthCheck = () => Promise<Record<string, "ok" | "down">>;

/**
 * One HTTP/1.1 listener for two doors: Connect methods at /api/v1/<package.Service>/<Method>, the
 * spec's REST paths for everything else, and GET /healthz for load balancers.
 */
export function createHttpServer(gateway: Gateway, health: HealthCheck): Server {
  const rest = new RestTranscoder(gateway);
  const connect = createConnectHandler(gateway);
  return createServer((req, res) => {
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
    const door = connect.serves(pathname) ? connect : rest;
    door.handle(req, res).catch((err) => sendError(res, toAppError(err, gateway.logger), "problem", ""));
  });
}

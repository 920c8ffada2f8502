import { createHash, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "../platform/logger.js";

export interface MetricsServerOptions {
  host: string;
  port: number;
  /** When set, scrapes must send `Authorization: Bearer <token>`. */
  token: string | null;
  /** The exposition and its content type; a rejection answers 500 (logged). */
  render(): Promise<{ body: string; contentType: string }>;
  logger: Logger;
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Constant time whatever the lengths: both sides are hashed to the same size first. */
function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = /^Bearer (.+)$/i.exec(header ?? "")?.[1] ?? "";
  return timingSafeEqual(digest(presented), digest(token));
}

/**
 * `GET /metrics` on a port of its own (METRICS_PORT), apart from the API port: the API's
 * authentication is per tenant and a scrape is not, and an operator can keep this port off the
 * public network. METRICS_TOKEN adds a bearer token for networks where that is not enough.
 */
export async function startMetricsServer(o: MetricsServerOptions): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path !== "/metrics") return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    if (req.method !== "GET" && req.method !== "HEAD") return void res.writeHead(405, { allow: "GET, HEAD" }).end();
    if (o.token !== null && !bearerMatches(req.headers.authorization, o.token)) {
      return void res.writeHead(401, { "www-authenticate": 'Bearer realm="metrics"', "content-type": "text/plain" }).end("unauthorized\n");
    }
    o.render().then(
      ({ body, contentType }) => res.writeHead(200, { "content-type": contentType }).end(req.method === "HEAD" ? undefined : body),
      (err) => {
        o.logger.error({ err }, "metrics could not be collected");
        res.writeHead(500, { "content-type": "text/plain" }).end("metrics could not be collected\n");
      },
    );
  });
  server.listen(o.port, o.host);
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  o.logger.info({ metricsPort: port, token: o.token !== null }, "metrics listening");
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

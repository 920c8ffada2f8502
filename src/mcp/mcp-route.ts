import type { RecommendRequest, RecommendResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import { authorize, type Authenticator } from "../identity/authenticator.js";
import type { TenantContext } from "../platform/context.js";
import { AppError } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import { rateLimitHeaders, toAppError } from "../transport/error-mapping.js";
import { requestIdOf } from "../transport/gateway.js";
import { csrfRefusal } from "../transport/csrf-guard.js";
import { httpCallInfo, readBody, sendError } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { parseJsonBody } from "../transport/message-codec.js";
import { ServiceCaller, type ServiceMethods } from "./service-caller.js";

export const MCP_PATH = "/api/v1/mcp";

/**
 * The MCP SDK and the server built on it, imported by the first MCP request: the SDK (with its
 * transports and schemas) takes about 25 MB of a service's resident memory, which a service that
 * is never asked over MCP should not carry.
 */
async function mcpSdk() {
  const [{ createMcpServer }, { StreamableHTTPServerTransport }] = await Promise.all([
    import("./mcp-server.js"),
    import("@modelcontextprotocol/sdk/server/streamableHttp.js"),
  ]);
  return { createMcpServer, StreamableHTTPServerTransport };
}

export interface McpRouteOptions {
  methods: ServiceMethods;
  authenticator: Authenticator;
  rateLimits: RateLimitPolicy;
  preview: (ctx: TenantContext, req: RecommendRequest) => Promise<RecommendResponse>;
  logger: Logger;
  bodyLimitBytes: number;
}

/**
 * `POST /api/v1/mcp` (spec 5.2): the Model Context Protocol over its Streamable HTTP transport,
 * through the official SDK, in stateless mode (no session id; every POST carries its own
 * credentials and gets its own server), so that any process behind a load balancer answers any
 * request. Control plane: the caller authenticates as on every other route (the shared
 * Authenticator, the CSRF guard) and needs control-plane access; a data-plane key is 403.
 * Responses are plain JSON (`enableJsonResponse`), not SSE streams: no tool streams progress.
 */
export function createMcpRoute(o: McpRouteOptions): HttpRoute {
  return {
    path: MCP_PATH,
    async handle(req, res) {
      const call = httpCallInfo(req);
      const requestId = requestIdOf(call);
      try {
        if (req.method !== "POST") {
          res.setHeader("allow", "POST");
          throw new AppError({ code: "FAILED_PRECONDITION", reason: "METHOD_NOT_ALLOWED", message: "The MCP endpoint is stateless: only POST is served (no SSE stream, no session to delete)" });
        }
        const csrf = csrfRefusal("POST", req.headers["content-type"], call, true);
        if (csrf) throw csrf;
        const auth = await o.authenticator.authenticate(call);
        authorize(auth, { plane: "control", minRole: "viewer" });
        // One hit of the tenant's default window per request (spec 8: all API requests).
        const { rateLimit } = await o.rateLimits.limit(null, { tenantId: auth.tenantId, clientKey: "", source: call.remoteAddress }, async () => undefined);
        for (const [name, value] of Object.entries(rateLimitHeaders(rateLimit))) res.setHeader(name, value);
        const body = parseJsonBody(await readBody(req, o.bodyLimitBytes));
        const ctx: TenantContext = { ...auth, requestId };
        const { createMcpServer, StreamableHTTPServerTransport } = await mcpSdk();
        const server = createMcpServer(new ServiceCaller(o.methods, auth, ctx, call, o.bodyLimitBytes, o.preview), o.logger);
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        res.once("close", () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, body);
      } catch (err) {
        sendError(res, toAppError(err, o.logger, requestId), "problem", requestId);
      }
    },
  };
}

import type { IncomingMessage, ServerResponse } from "node:http";
import SCIMMY from "scimmy";
import type { Authenticator } from "../identity/authenticator.js";
import type { TenantContext } from "../platform/context.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import type { Logger } from "../platform/logger.js";
import { requestIdOf } from "../transport/gateway.js";
import { errorHeaders, httpStatusOf, rateLimitHeaders, toAppError } from "../transport/error-mapping.js";
import { httpCallInfo, isJsonMediaType, mediaType, readBody } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { readDiscovery } from "./scim-discovery.js";
import { SCIM_BASE_PATH, scimError } from "./scim-mapper.js";
import type { ListQuery, ScimService } from "./scim-service.js";

const SCIM_CONTENT_TYPE = "application/scim+json; charset=utf-8";
const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

/** Why an AppError is refused, in RFC 7644's scimType vocabulary (3.12). */
const SCIM_TYPE_BY_CODE: Record<string, string> = { INVALID_ARGUMENT: "invalidValue", ALREADY_EXISTS: "uniqueness" };

/**
 * `/api/v1/scim/v2/*` (spec 5.1): the SCIM door, outside protobuf because its wire shapes are the
 * RFC's. Authenticates with the directory's key (Authenticator.authenticateScim: a Bearer API key
 * with the scim scope, whose user is an admin), dispatches to ScimService, and answers
 * `application/scim+json`, errors included (RFC 7644 error messages, `status` a string).
 */
export function createScimRoute(service: ScimService, authenticator: Authenticator, rateLimits: RateLimitPolicy, logger: Logger, bodyLimitBytes: number): HttpRoute {
  return {
    path: `${SCIM_BASE_PATH}/`,
    async handle(req, res) {
      const call = httpCallInfo(req);
      const requestId = requestIdOf(call);
      try {
        const auth = await authenticator.authenticateScim(call);
        if (auth.role !== "admin") throw scimError(403, null, `SCIM changes users and roles: the key's user must be an admin (has ${auth.role})`);
        const ctx: TenantContext = { ...auth, requestId };
        // The tenant's default window (spec 8: all API requests), as on the generated routes.
        const { rateLimit } = await rateLimits.limit(null, { tenantId: ctx.tenantId, clientKey: "", source: call.remoteAddress }, async () => undefined);
        for (const [name, value] of Object.entries(rateLimitHeaders(rateLimit))) res.setHeader(name, value);
        const url = new URL(req.url ?? "/", "http://scim.invalid");
        const [kind, id, ...rest] = url.pathname.slice(SCIM_BASE_PATH.length + 1).split("/").map(decodeSegment);
        if (rest.length || id === "") throw scimError(404, null, `${url.pathname} is not a SCIM resource`);
        const body = WITH_BODY.has(req.method ?? "") ? await readScimBody(req, bodyLimitBytes) : undefined;
        const query: ListQuery = {
          filter: url.searchParams.get("filter") ?? undefined,
          startIndex: url.searchParams.get("startIndex") ?? undefined,
          count: url.searchParams.get("count") ?? undefined,
          attributes: url.searchParams.get("attributes") ?? undefined,
          excludedAttributes: url.searchParams.get("excludedAttributes") ?? undefined,
        };
        const method = req.method ?? "GET";
        await dispatch(service, ctx, method, kind, id, query, body, res);
      } catch (err) {
        sendScimError(res, err, logger, requestId);
      }
    },
  };
}

async function dispatch(service: ScimService, ctx: TenantContext, method: string, kind: string, id: string | undefined, query: ListQuery, body: unknown, res: ServerResponse): Promise<void> {
  const route = `${method} ${kind}${id === undefined ? "" : "/:id"}`;
  switch (route) {
    case "GET Users":
      return send(res, 200, await service.listUsers(ctx, query));
    case "POST Users": {
      const created = (await service.createUser(ctx, body)) as { id: string };
      return send(res, 201, created, `${SCIM_BASE_PATH}/Users/${created.id}`);
    }
    case "GET Users/:id":
      return send(res, 200, await service.getUser(ctx, id!, query));
    case "PUT Users/:id":
      return send(res, 200, await service.replaceUser(ctx, id!, body));
    case "PATCH Users/:id":
      return send(res, 200, await service.patchUser(ctx, id!, body));
    case "DELETE Users/:id":
      await service.deleteUser(ctx, id!);
      res.writeHead(204).end();
      return;
    case "GET Groups":
      return send(res, 200, await service.listGroups(ctx, query));
    case "GET Groups/:id":
      return send(res, 200, await service.getGroup(ctx, id!, query));
    case "PUT Groups/:id":
      return send(res, 200, await service.replaceGroup(ctx, id!, body));
    case "PATCH Groups/:id":
      return send(res, 200, await service.patchGroup(ctx, id!, body));
    case "POST Groups":
    case "DELETE Groups/:id":
      throw scimError(400, "mutability", "Groups are the roles admin, editor and viewer: they can be neither created nor deleted, only their members changed");
  }
  if (method === "GET" && ["ServiceProviderConfig", "ResourceTypes", "Schemas"].includes(kind)) return send(res, 200, await readDiscovery(kind, id));
  if (["Users", "Groups", "ServiceProviderConfig", "ResourceTypes", "Schemas"].includes(kind)) throw scimError(405, null, `${method} is not supported on ${kind}${id === undefined ? "" : "/<id>"}`);
  throw scimError(404, null, `${kind} is not a SCIM resource type of this service`);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw scimError(404, null, "The path is not valid percent-encoded UTF-8");
  }
}

/** SCIM bodies are JSON (`application/scim+json`, or plain `application/json` that clients also send). */
async function readScimBody(req: IncomingMessage, limit: number): Promise<unknown> {
  if (!isJsonMediaType(mediaType(req.headers["content-type"]))) {
    throw scimError(415, null, "Content-Type must be application/scim+json (or application/json)");
  }
  const raw = await readBody(req, limit);
  try {
    return JSON.parse(raw.toString("utf8"));
  } catch {
    throw scimError(400, "invalidSyntax", "The request body is not valid JSON");
  }
}

function send(res: ServerResponse, status: number, body: unknown, location?: string): void {
  res.writeHead(status, { "content-type": SCIM_CONTENT_TYPE, ...(location ? { location } : {}) });
  res.end(JSON.stringify(body));
}

/** Every failure as an RFC 7644 error message; an unexpected one is logged and answered 500 without detail. */
function sendScimError(res: ServerResponse, err: unknown, logger: Logger, requestId: string): void {
  if (res.headersSent) return void res.destroy();
  let status: number;
  let scimType: string | undefined;
  let detail: string;
  if (err instanceof SCIMMY.Types.Error) {
    ({ status, scimType, message: detail } = err as { status: number; scimType?: string; message: string });
  } else {
    const appError = toAppError(err, logger, requestId);
    status = httpStatusOf(appError);
    scimType = SCIM_TYPE_BY_CODE[appError.code];
    detail = appError.message;
    for (const [name, value] of Object.entries(errorHeaders(appError, requestId))) res.setHeader(name, value);
    if (appError.code === "UNAUTHENTICATED") res.setHeader("www-authenticate", 'Bearer realm="scim"');
  }
  res.writeHead(status, { "content-type": SCIM_CONTENT_TYPE, "x-request-id": requestId });
  res.end(
    JSON.stringify({
      schemas: ["urn:ietf:params:scim:api:messages:2.0:Error"],
      status: String(status),
      ...(scimType ? { scimType } : {}),
      detail,
    }),
  );
}

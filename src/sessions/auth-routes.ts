import type { IncomingMessage, ServerResponse } from "node:http";
import type { Authenticator } from "../identity/authenticator.js";
import type { CallInfo } from "../platform/context.js";
import { AppError, invalidField } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import type { RouteRateLimit } from "../platform/method-policy.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import { csrfRefusal } from "../transport/csrf-guard.js";
import { httpStatusOf, toAppError } from "../transport/error-mapping.js";
import { requestIdOf } from "../transport/gateway.js";
import { httpCallInfo, isJsonMediaType, mediaType, readBody, sendError } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { parseJsonBody } from "../transport/message-codec.js";
import { AUTH_RATE_LIMITS as L, addressKey, withinLimits } from "./auth-rate-limits.js";
import { PAGE_HEADERS, passwordResetPage, resultPage, verifyEmailPage } from "./auth-pages.js";
import type { SessionIssuer } from "./session-issuer.js";
import { sessionTokenOf } from "./session-issuer.js";
import type { SessionService } from "./session-service.js";

/** Bodies here are a few short fields. */
const MAX_BODY_BYTES = 16 * 1024;

export interface AuthRoutesDeps {
  service: SessionService;
  authenticator: Authenticator;
  issuer: SessionIssuer;
  rateLimits: RateLimitPolicy;
  logger: Logger;
}

interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  call: CallInfo;
  requestId: string;
  url: URL;
}

type Handler = (x: Exchange) => Promise<void>;
type Body = Record<string, unknown>;
/** A rate-limit window and the key counted in it. */
type Window = [RouteRateLimit, string];

/**
 * The /api/auth routes (docs/sessions.md): a thin door over SessionService, outside protobuf
 * because they set cookies and serve the pages of mailed links. Errors use the problem shape of
 * spec 7 like the control plane; registration, sign-in and reset requests take JSON only, so a
 * cross-site form can neither sign someone in nor register in their name.
 */
export function createAuthRoutes(d: AuthRoutesDeps): HttpRoute[] {
  const { service, rateLimits } = d;
  const source = (x: Exchange) => `ip:${x.call.remoteAddress}`;
  const emailKey = (body: Body) => (typeof body.email === "string" ? addressKey(body.email) : null);
  /** The source's window, then the address's when the body names one (validation answers the rest). */
  const windows = (x: Exchange, body: Body, bySource: RouteRateLimit, byAddress: RouteRateLimit): Window[] => {
    const key = emailKey(body);
    return key ? [[bySource, source(x)], [byAddress, key]] : [[bySource, source(x)]];
  };

  const route = (path: string, handlers: Partial<Record<"GET" | "POST", Handler>>): HttpRoute => ({
    path,
    async handle(req, res) {
      const call = httpCallInfo(req);
      const requestId = requestIdOf(call);
      // Every answer, refusals included: they tell whether an address is registered or a link still works.
      res.setHeader("cache-control", "no-store");
      try {
        const handler = handlers[(req.method ?? "GET").toUpperCase() as "GET" | "POST"];
        if (!handler) {
          req.resume();
          throw new AppError({ code: "UNIMPLEMENTED", reason: "METHOD_NOT_ALLOWED", message: `${req.method} is not allowed on ${path}` });
        }
        await handler({ req, res, call, requestId, url: new URL(req.url ?? "/", "http://localhost") });
      } catch (err) {
        sendError(res, toAppError(err, d.logger, requestId), "problem", requestId);
      }
    },
  });

  /** A form post from a link's page gets a page back; anything else gets JSON. */
  const tokenUse = (use: (body: Body, x: Exchange) => Promise<unknown>, done: string): Handler => async (x) => {
    const { body, form } = await readFields(x.req, true);
    if (!form) return sendJson(x, 200, await withinLimits(rateLimits, [[L.tokenSource, source(x)]], x.call.remoteAddress, () => use(body, x)));
    try {
      await withinLimits(rateLimits, [[L.tokenSource, source(x)]], x.call.remoteAddress, () => use(body, x));
      sendPage(x, 200, resultPage("Done", done));
    } catch (err) {
      const app = toAppError(err, d.logger, x.requestId);
      sendPage(x, httpStatusOf(app), resultPage("This link cannot be used", app.message));
    }
  };

  return [
    route("/api/auth/register", {
      POST: async (x) => {
        const { body } = await readFields(x.req, false);
        sendJson(x, 201, await withinLimits(rateLimits, windows(x, body, L.mailSource, L.mailAddress), x.call.remoteAddress, () => service.register(body, x.requestId)));
      },
    }),
    route("/api/auth/verify-email", {
      GET: async (x) => sendPage(x, 200, verifyEmailPage(x.url.searchParams.get("token") ?? "")),
      POST: tokenUse((body) => service.verifyEmail(body), "Your e-mail address is verified. You can now sign in."),
    }),
    route("/api/auth/sign-in", {
      POST: async (x) => {
        const { body } = await readFields(x.req, false);
        const limits = windows(x, body, L.signInSource, L.signInAddress);
        const { view, setCookie } = await withinLimits(rateLimits, limits, x.call.remoteAddress, () => service.signIn(body));
        sendJson(x, 200, view, setCookie);
      },
    }),
    route("/api/auth/sign-out", {
      POST: async (x) => {
        const refusal = csrfRefusal("POST", x.req.headers["content-type"], x.call, true);
        x.req.resume();
        if (refusal) throw refusal;
        await service.signOut(sessionTokenOf(x.call.header("cookie")));
        x.res.writeHead(204, { "set-cookie": d.issuer.clearCookie(), "cache-control": "no-store", "x-request-id": x.requestId }).end();
      },
    }),
    route("/api/auth/session", {
      GET: async (x) => {
        const auth = await d.authenticator.authenticate(x.call);
        sendJson(x, 200, await service.describe(auth), auth.setCookie);
      },
    }),
    route("/api/auth/password-reset", {
      POST: async (x) => {
        const { body } = await readFields(x.req, false);
        sendJson(x, 202, await withinLimits(rateLimits, windows(x, body, L.mailSource, L.mailAddress), x.call.remoteAddress, () => service.requestPasswordReset(body)));
      },
    }),
    route("/api/auth/password-reset/confirm", {
      GET: async (x) => sendPage(x, 200, passwordResetPage(x.url.searchParams.get("token") ?? "")),
      POST: tokenUse((body, x) => service.confirmPasswordReset(body, x.requestId), "Your password is changed. Sign in with the new one."),
    }),
  ];
}

/** JSON, or (where a page posts) form fields; anything else is 415, as on the REST door. */
async function readFields(req: IncomingMessage, allowForm: boolean): Promise<{ body: Body; form: boolean }> {
  const raw = await readBody(req, MAX_BODY_BYTES);
  const type = mediaType(req.headers["content-type"]);
  if (allowForm && type === "application/x-www-form-urlencoded") return { body: Object.fromEntries(new URLSearchParams(raw.toString("utf8"))), form: true };
  if (!isJsonMediaType(type)) {
    throw new AppError({
      code: "INVALID_ARGUMENT",
      reason: "UNSUPPORTED_MEDIA_TYPE",
      message: `Content-Type must be application/json${allowForm ? " or application/x-www-form-urlencoded" : ""}, got ${type || "none"}`,
    });
  }
  const body = parseJsonBody(raw);
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw invalidField("body", "must be a JSON object");
  return { body, form: false };
}

function sendJson(x: Exchange, status: number, body: unknown, setCookie?: string): void {
  const headers: Record<string, string> = { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "x-request-id": x.requestId };
  if (setCookie) headers["set-cookie"] = setCookie;
  x.res.writeHead(status, headers).end(JSON.stringify(body));
}

function sendPage(x: Exchange, status: number, html: string): void {
  x.res.writeHead(status, { ...PAGE_HEADERS, "x-request-id": x.requestId }).end(html);
}

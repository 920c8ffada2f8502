import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthOidcConfig } from "../config.js";
import { AppError, badRequest, invalidField, notFound } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import type { RouteRateLimit } from "../platform/method-policy.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import { toAppError } from "../transport/error-mapping.js";
import { requestIdOf } from "../transport/gateway.js";
import { httpCallInfo, sendError } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { ATTEMPT_TTL_SECONDS } from "./sign-in-attempts.js";
import { newNonce, type SsoConfigService } from "./sso-config-service.js";
import type { SsoSignIn } from "./sso-sign-in.js";

export const SSO_CALLBACK_PATH = "/api/v1/sso/callback";
export const OIDC_SIGNIN_PATH = "/api/auth/signin/oidc";
export const OIDC_CALLBACK_PATH = "/api/auth/callback/oidc";
export const PROVIDERS_PATH = "/api/auth/providers";
export const SSO_START_PATH = "/api/auth/sso/start";
/** Pins the global sign-in's state to the browser that started it (login CSRF). */
export const OIDC_STATE_COOKIE = "ds_oidc_state";

/**
 * Spec 8: 30 SSO callbacks per minute, counted per caller address so that nobody can spend a
 * tenant's sign-ins by sending forged states naming it. Fails closed like the token endpoint: a
 * sign-in is not let through uncounted when the limiter store is down.
 */
export const SSO_CALLBACK_LIMIT: RouteRateLimit = {
  bucket: "sso_callback",
  limit: 30,
  windowSeconds: 60,
  key: "client_id",
  failClosed: true,
  countSuccesses: false,
  costField: null,
};

/**
 * The signed-out page's discovery and tenant SSO start, per source address like the other /api/auth
 * routes: bounds probing tenant ids and filling the attempt store from one address.
 */
export const SSO_START_LIMIT: RouteRateLimit = { ...SSO_CALLBACK_LIMIT, bucket: "auth_sso_source", limit: 60 };

export interface SsoRoutesOptions {
  signIn: SsoSignIn;
  configs: SsoConfigService;
  rateLimits: RateLimitPolicy;
  logger: Logger;
  /** The deployment's identity provider; null answers the global routes with 404. */
  authOidc: AuthOidcConfig | null;
  publicUrl: string | null;
  /** Whether the state cookie carries `Secure`: the session cookie's switch. */
  secureCookie: boolean;
}

/** The query of a request URL (the host does not matter: only path and query are read). */
function queryOf(req: IncomingMessage): URLSearchParams {
  return new URL(req.url ?? "/", "http://localhost").searchParams;
}

function cookieValue(header: string | undefined, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim() || null;
  }
  return null;
}

function methodNotAllowed(allowed: string): AppError {
  return new AppError({ code: "INVALID_ARGUMENT", reason: "METHOD_NOT_ALLOWED", message: `Use ${allowed} on this route` });
}

/** Same-site paths only, so the sign-in never redirects a browser to another site. */
function safeReturnTo(raw: string | null): string {
  if (raw === null || raw === "") return "/";
  if (raw.length > 2048 || !raw.startsWith("/") || raw.startsWith("//") || raw.includes("\\")) {
    throw invalidField("returnTo", "must be a path on this site, starting with a single /");
  }
  return raw;
}

/**
 * The doors of sign-in through an identity provider, outside protobuf because they redirect and set
 * cookies: the signed-out page's discovery and tenant SSO start, the tenant SSO callback (spec 4.19)
 * with the reserved SAML consumer, and the global provider's start and callback (5.5). Errors answer
 * in the problem shape of spec 7.
 */
export function createSsoRoutes(o: SsoRoutesOptions): HttpRoute[] {
  // The state cookie follows the operator's one switch for the session cookie (SESSION_COOKIE_SECURE).
  const secure = o.secureCookie;
  const stateCookie = (value: string, maxAge: number) =>
    [`${OIDC_STATE_COOKIE}=${value}`, `Path=${OIDC_CALLBACK_PATH}`, "HttpOnly", "SameSite=Lax", `Max-Age=${maxAge}`, ...(secure ? ["Secure"] : [])].join("; ");
  const limited = <T>(req: IncomingMessage, rule: RouteRateLimit, call: () => Promise<T>) => {
    const address = req.socket.remoteAddress ?? "";
    return o.rateLimits.limit(rule, { tenantId: null, clientKey: `ip:${address}`, source: address }, call);
  };
  const route = (path: string, handle: (req: IncomingMessage, res: ServerResponse, requestId: string) => Promise<void>): HttpRoute => ({
    path,
    async handle(req, res) {
      const requestId = requestIdOf(httpCallInfo(req));
      try {
        await handle(req, res, requestId);
      } catch (err) {
        // A failed global callback also drops its state cookie: that attempt is over either way.
        if (path === OIDC_CALLBACK_PATH && !res.headersSent) res.setHeader("set-cookie", stateCookie("", 0));
        sendError(res, toAppError(err, o.logger, requestId), "problem", requestId);
      }
    },
  });
  const globalClient = () => {
    if (!o.authOidc || !o.publicUrl) throw notFound("sign-in method", "oidc (AUTH_OIDC_ISSUER is not set)");
    return { issuer: o.authOidc.issuer, clientId: o.authOidc.clientId, clientSecret: o.authOidc.clientSecret };
  };

  const ssoUnavailable = () => badRequest("SSO_NOT_ACTIVE", "Single sign-on is not available for this organization");

  return [
    route(PROVIDERS_PATH, async (req, res) => {
      if (req.method !== "GET") throw methodNotAllowed("GET");
      const tenant = queryOf(req).get("tenant");
      const { result: body } = await limited(req, SSO_START_LIMIT, async () => {
        const tenantOptions = tenant ? await o.configs.signInOptions(tenant) : { sso: false, password: true };
        return { ...tenantOptions, identityProvider: o.authOidc !== null && o.publicUrl !== null };
      });
      res
        .writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" })
        .end(JSON.stringify({ password: body.password, identityProvider: body.identityProvider, sso: body.sso }));
    }),
    route(SSO_START_PATH, async (req, res) => {
      if (req.method !== "GET") throw methodNotAllowed("GET");
      const query = queryOf(req);
      const tenant = query.get("tenant");
      if (!tenant) throw invalidField("tenant", "is required: the organization (tenant) id");
      const returnTo = safeReturnTo(query.get("returnTo"));
      if (!o.publicUrl) throw notFound("sign-in method", "sso (PUBLIC_URL is not set)");
      const redirectUri = `${o.publicUrl}${SSO_CALLBACK_PATH}`;
      const { result: location } = await limited(req, SSO_START_LIMIT, async () => {
        // One answer for an unknown tenant, one without a configuration and one with SSO disabled: no enumeration.
        if (!(await o.configs.signInOptions(tenant)).sso) throw ssoUnavailable();
        return o.configs.startSignIn(tenant, redirectUri, newNonce(), returnTo);
      });
      res.writeHead(302, { location, "cache-control": "no-store" }).end();
    }),
    route(SSO_CALLBACK_PATH, async (req, res, requestId) => {
      if (req.method === "POST") {
        // Spec 2.12/4.19: SAML is reserved; its consumer activates nothing. It is still an SSO
        // callback, so spec 8's callback limit counts it: a client looping on it is told to wait.
        await limited(req, SSO_CALLBACK_LIMIT, async () => {
          throw new AppError({ code: "UNIMPLEMENTED", reason: "SAML_NOT_ENABLED", message: "SAML single sign-on is not enabled on this service; use OIDC" });
        });
      }
      if (req.method !== "GET") throw methodNotAllowed("GET");
      const {
        result: { result, returnTo },
      } = await limited(req, SSO_CALLBACK_LIMIT, async () => {
        const { result, session, returnTo } = await o.signIn.tenantCallback(queryOf(req), requestId);
        res.setHeader("set-cookie", session.setCookie);
        return { result, returnTo };
      });
      // Begun at the public start route: back to the page the person wanted; else spec 4.19's body.
      if (returnTo !== null) return void res.writeHead(302, { location: `${o.publicUrl ?? ""}${returnTo}`, "cache-control": "no-store" }).end();
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "x-request-id": requestId }).end(JSON.stringify(result));
    }),
    route(OIDC_SIGNIN_PATH, async (req, res) => {
      if (req.method !== "GET") throw methodNotAllowed("GET");
      const client = globalClient();
      const returnTo = safeReturnTo(queryOf(req).get("returnTo"));
      const state = randomBytes(24).toString("base64url");
      const location = await o.signIn.startGlobal(client, `${o.publicUrl}${OIDC_CALLBACK_PATH}`, state, returnTo);
      res.writeHead(302, { location, "set-cookie": stateCookie(state, ATTEMPT_TTL_SECONDS), "cache-control": "no-store" }).end();
    }),
    route(OIDC_CALLBACK_PATH, async (req, res) => {
      if (req.method !== "GET") throw methodNotAllowed("GET");
      const client = globalClient();
      const { result } = await limited(req, SSO_CALLBACK_LIMIT, () => o.signIn.completeGlobal(client, queryOf(req), cookieValue(req.headers.cookie, OIDC_STATE_COOKIE)));
      res
        .writeHead(302, { location: `${o.publicUrl}${result.returnTo}`, "set-cookie": [result.session.setCookie, stateCookie("", 0)], "cache-control": "no-store" })
        .end();
    }),
  ];
}

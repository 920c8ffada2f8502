import { randomUUID } from "node:crypto";
import type { DescMethod, Message } from "@bufbuild/protobuf";
import type { CallInfo, TenantContext } from "../platform/context.js";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import { AppError } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { methodPolicy, type ResolvedPolicy } from "../platform/method-policy.js";
import type { RateLimitPolicy, RateLimitSubject } from "../platform/rate-limit-policy.js";
import type { RateLimitDecision } from "../platform/rate-limiter.js";
import { authorize, type Authenticated, type Authenticator } from "../identity/authenticator.js";
import type { CronAuthenticator } from "../identity/cron-authenticator.js";
import { screenRequest } from "./request-screen.js";
import { csrfRefusal } from "./csrf-guard.js";
import type { Door, RequestObserver } from "../platform/request-observer.js";
import { statusOfFailure } from "./error-mapping.js";
import { annotateRequest } from "../platform/tracing.js";


/** What an HTTP door knows that gRPC does not: the CSRF guard needs it. */
export interface HttpFacts {
  method: string;
  contentType: string | undefined;
}

export interface Invocation {
  door: Door;
  call: CallInfo;
  http: HttpFacts | null;
  requestId: string;
}

/** The caller's X-Request-Id when given, else a fresh one; doors take it first so every error carries it. */
export function requestIdOf(call: CallInfo): string {
  return call.header("x-request-id") || randomUUID();
}

export interface InvocationResult {
  response: Message;
  requestId: string;
  rateLimit: RateLimitDecision | null;
  /** A renewed session cookie to send with the answer (HTTP doors only). */
  setCookie: string | null;
}

/**
 * The caller as services see it. Members named, not spread: on Node 20's V8 a spread copy that then
 * gains a member (`{ ...auth, requestId }`) takes a slow path, about 3 µs, and allocates what
 * survives into the old generation (docs/performance.md, eleventh session).
 */
function tenantContext(auth: Authenticated, requestId: string): TenantContext {
  return { tenantId: auth.tenantId, userId: auth.userId, actorName: auth.actorName, role: auth.role, principal: auth.principal, requestId };
}

/**
 * The one pipeline behind all three doors: CSRF guard (HTTP only), authentication, plane and role
 * checks, decoding and the request screen (request-screen.ts), rate limits, then the service method.
 * Doors only decode, call this, and map errors.
 */
export class Gateway {
  private readonly handlers = new Map<DescMethod, Handler>();

  constructor(
    readonly registrations: ServiceRegistration[],
    private readonly authenticator: Authenticator,
    private readonly rateLimits: RateLimitPolicy,
    readonly defaultBodyLimitBytes: number,
    readonly logger: Logger,
    /** Told about every call that reached a method, with its outcome and duration. */
    private readonly observer: RequestObserver,
    private readonly cronAuthenticator: CronAuthenticator,
  ) {
    for (const { service, impl } of registrations) {
      for (const method of service.methods) {
        const handler = impl[method.localName];
        if (typeof handler !== "function") throw new Error(`${service.typeName}.${method.name} has no implementation`);
        this.handlers.set(method, handler.bind(impl));
        methodPolicy(method, defaultBodyLimitBytes); // fail at start-up on a method without a policy
      }
    }
  }

  policy(method: DescMethod): ResolvedPolicy {
    return methodPolicy(method, this.defaultBodyLimitBytes);
  }

  /** Runs the call and tells the observer its outcome (the HTTP status REST answers) and duration. */
  async invoke(method: DescMethod, decode: () => Message | Promise<Message>, inv: Invocation): Promise<InvocationResult> {
    const started = performance.now();
    const caller: { tenantId?: string } = {};
    let status = 500;
    try {
      const result = await this.dispatch(method, decode, inv, caller);
      status = this.policy(method).httpStatus;
      return result;
    } catch (err) {
      status = statusOfFailure(err);
      throw err;
    } finally {
      this.observer.observe(inv.door, method, status, performance.now() - started, caller.tenantId);
      annotateRequest(status, caller.tenantId);
    }
  }

  /**
   * `decode` runs after authentication, so an anonymous caller learns nothing from body errors,
   * and before rate limiting, which may key on a body field (client_id). `caller` learns the tenant.
   */
  private async dispatch(
    method: DescMethod,
    decode: () => Message | Promise<Message>,
    inv: Invocation,
    caller: { tenantId?: string },
  ): Promise<InvocationResult> {
    const handler = this.handlers.get(method);
    if (!handler) throw new AppError({ code: "UNIMPLEMENTED", reason: "UNIMPLEMENTED", message: `${method.name} is not served` });
    const policy = this.policy(method);
    const requestId = inv.requestId;
    const csrf = inv.http && csrfRefusal(inv.http.method, inv.http.contentType, inv.call, policy.plane !== "public" && policy.plane !== "cron");
    if (csrf) throw csrf;
    let ctx: TenantContext;
    let setCookie: string | null = null;
    if (policy.plane === "public") {
      ctx = { tenantId: "", userId: null, actorName: "anonymous", role: "viewer", principal: { kind: "anonymous" }, requestId };
    } else if (policy.plane === "cron") {
      ctx = tenantContext(this.cronAuthenticator.authenticate(inv.call), requestId);
    } else {
      const auth = await this.authenticator.authenticate(inv.call);
      authorize(auth, policy);
      ctx = tenantContext(auth, requestId);
      setCookie = auth.setCookie ?? null;
    }
    caller.tenantId = ctx.tenantId;
    const request = await decode();
    screenRequest(method.input, request);
    const subject = new CallerSubject(ctx.tenantId || null, (request as { clientId?: unknown }).clientId, inv.call);
    const { result: response, rateLimit } = await this.rateLimits.limit(policy.rateLimit, subject, () => handler(ctx, request, inv.call), hitCost(policy, request));
    return { response, requestId, rateLimit, setCookie };
  }
}

/**
 * Who a call's rate limits count against. The address is read only by the rules that key on it
 * (a call without a tenant, a client_id route, a route counting failed attempts per address): a
 * gRPC caller's address is formatted from its peer string. A class, for the reason GrpcCallInfo
 * is one (grpc.ts).
 */
class CallerSubject implements RateLimitSubject {
  constructor(
    readonly tenantId: string | null,
    private readonly clientId: unknown,
    private readonly call: CallInfo,
  ) {}

  /** Prefixed so that a client_id chosen to look like an address cannot spend that address's window. */
  get clientKey(): string {
    return this.clientId ? `client_id:${String(this.clientId)}` : `ip:${this.call.remoteAddress}`;
  }

  get source(): string {
    return this.call.remoteAddress;
  }
}

/** A route whose limit counts items (`cost_field`) takes one hit per item, and at least one. */
function hitCost(policy: ResolvedPolicy, request: Message): number {
  const field = policy.rateLimit?.costField;
  if (!field) return 1;
  const items = (request as unknown as Record<string, unknown>)[field];
  return Array.isArray(items) ? Math.max(1, items.length) : 1;
}

/** Builds the AppError for an oversize body; each door detects size its own way. */
export function payloadTooLarge(limit: number): AppError {
  return new AppError({
    code: "RESOURCE_EXHAUSTED",
    reason: "PAYLOAD_TOO_LARGE",
    message: `Request body exceeds the limit of ${limit} bytes`,
    details: { limitBytes: limit },
  });
}

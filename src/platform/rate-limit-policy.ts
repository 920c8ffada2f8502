import type { RateLimitOverride } from "../config.js";
import { AppError } from "./errors.js";
import type { Logger } from "./logger.js";
import { DEFAULT_RATE_LIMIT, type RouteRateLimit } from "./method-policy.js";
import type { RateLimitDecision, RateLimiter } from "./rate-limiter.js";
import { tenantKey } from "./redis.js";
import { TtlCache } from "./ttl-cache.js";

const countedFailures = new WeakMap<object, RateLimitDecision>();

/** The window a failed call was counted in, for the X-RateLimit headers of its error answer. */
export function rateLimitOfFailure(err: unknown): RateLimitDecision | null {
  return (typeof err === "object" && err !== null && countedFailures.get(err)) || null;
}

export interface RateLimitSubject {
  tenantId: string | null;
  /** client_id from the body, or the remote address when absent (token endpoint). */
  clientKey: string;
  /** The caller's address, for routes whose failed attempts count per key and address. */
  source: string;
}

/**
 * Which limit applies (tenant override, then deployment override, then the proto's value for the
 * route's bucket), which window it counts in, and what happens when the limiter store is down:
 * routes marked fail_closed are refused, every other route is let through and logged.
 */
export class RateLimitPolicy {
  private readonly tenantOverrides = new TtlCache<Record<string, RateLimitOverride>>(30_000);

  constructor(
    private readonly limiter: RateLimiter,
    private readonly deploymentOverrides: Record<string, RateLimitOverride>,
    private readonly loadTenantOverrides: (tenantId: string) => Promise<Record<string, RateLimitOverride>>,
    private readonly logger: Logger,
  ) {}

  /**
   * Runs `call` within the route's limit. Usually one hit before the call. A route that counts
   * successes (the token endpoint) takes a hit per key and address before the call, so that wrong
   * secrets sent from one address spend that address's window and nobody else's, and a hit per
   * key after a successful call, which keeps the spec's limit on what one client is issued.
   */
  async limit<T>(
    route: RouteRateLimit | null,
    subject: RateLimitSubject,
    call: () => Promise<T>,
    cost = 1,
  ): Promise<{ result: T; rateLimit: RateLimitDecision | null }> {
    const rule = route ?? DEFAULT_RATE_LIMIT;
    const key = this.windowKey(rule, subject);
    if (!rule.countSuccesses) {
      const rateLimit = await this.hit(rule, subject, key, cost);
      try {
        return { result: await call(), rateLimit };
      } catch (err) {
        // A call that was let through and then failed was counted all the same: its error answer
        // tells the caller how much of the window is left, as a success would.
        if (rateLimit && typeof err === "object" && err !== null) countedFailures.set(err, rateLimit);
        throw err;
      }
    }
    await this.hit(rule, subject, `${key}:from:${subject.source}`);
    const result = await call();
    return { result, rateLimit: await this.hit(rule, subject, key) };
  }

  private windowKey(rule: RouteRateLimit, subject: RateLimitSubject): string {
    return rule.key === "client_id" || !subject.tenantId
      ? `rl:{${rule.bucket}:${subject.clientKey}}`
      : tenantKey(subject.tenantId, "rl", rule.bucket);
  }

  private async hit(rule: RouteRateLimit, subject: RateLimitSubject, key: string, cost = 1): Promise<RateLimitDecision | null> {
    try {
      const tenantOverride = subject.tenantId
        ? (await this.tenantOverrides.get(subject.tenantId, () => this.loadTenantOverrides(subject.tenantId!)))[rule.bucket]
        : undefined;
      const effective = tenantOverride ?? this.deploymentOverrides[rule.bucket] ?? rule;
      const decision = await this.limiter.hit(key, effective.limit, effective.windowSeconds * 1000, cost);
      if (!decision.allowed) {
        throw new AppError({
          code: "RESOURCE_EXHAUSTED",
          reason: "RATE_LIMITED",
          message: `Rate limit of ${effective.limit} ${rule.costField ? rule.costField : "requests"} per ${effective.windowSeconds} seconds exceeded`,
          details: { retryAfterSeconds: decision.retryAfterSeconds, limit: decision.limit, remaining: 0 },
        });
      }
      return decision;
    } catch (err) {
      if ((err as AppError).reason === "RATE_LIMITED") throw err;
      if (rule.failClosed) {
        throw new AppError({
          code: "UNAVAILABLE",
          reason: "RATE_LIMITER_UNAVAILABLE",
          message: "The rate limiter is unavailable; try again shortly",
          details: { retryAfterSeconds: 5 },
          cause: err,
        });
      }
      this.logger.warn({ err: (err as Error).message, bucket: rule.bucket }, "rate limiter unavailable; request let through");
      return null;
    }
  }
}

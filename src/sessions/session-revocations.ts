import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";

/**
 * Ended sessions (sign-out), kept until no copy of their cookie can still be valid, so that a copy
 * replayed afterwards is refused by every process. Lookups are not cached: a sign-out bites at once
 * everywhere, at the price of one EXISTS per cookie request.
 */
export interface SessionRevocations {
  revoke(tenantId: string, sid: string, ttlMs: number): Promise<void>;
  /** Throws when the store cannot answer; the authenticator then fails closed. */
  isRevoked(tenantId: string, sid: string): Promise<boolean>;
}

/** `t:{<tenantId>}:session:revoked:<sid>` under REDIS_KEY_PREFIX, expiring with the last copy of the cookie. */
export function createRedisSessionRevocations(redis: RedisClient): SessionRevocations {
  const key = (tenantId: string, sid: string) => tenantKey(tenantId, "session", "revoked", sid);
  return {
    async revoke(tenantId, sid, ttlMs) {
      await redis.set(key(tenantId, sid), "1", "PX", Math.max(1, Math.ceil(ttlMs)));
    },
    async isRevoked(tenantId, sid) {
      return (await redis.exists(key(tenantId, sid))) === 1;
    },
  };
}

/** The single-node default (no REDIS_URL): one process, one map. */
export function createMemorySessionRevocations(now: () => number = Date.now): SessionRevocations {
  const until = new Map<string, number>();
  return {
    async revoke(tenantId, sid, ttlMs) {
      for (const [k, t] of until) if (t <= now()) until.delete(k);
      until.set(`${tenantId}:${sid}`, now() + ttlMs);
    },
    async isRevoked(tenantId, sid) {
      return (until.get(`${tenantId}:${sid}`) ?? 0) > now();
    },
  };
}

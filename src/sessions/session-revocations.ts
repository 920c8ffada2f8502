import type { Sequelize } from "sequelize";
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

/**
 * The single-node default (no REDIS_URL): the ended sessions in PostgreSQL, so that a restart does
 * not forget a sign-out (a map in memory did, and accepted a signed-out cookie again). One primary
 * key lookup per cookie request, as Redis's EXISTS; rows whose cookies have all expired are deleted
 * as later sign-outs come. `now` is the sessions' clock.
 */
export function createDatabaseSessionRevocations(db: Sequelize, now: () => number = Date.now): SessionRevocations {
  return {
    async revoke(tenantId, sid, ttlMs) {
      const at = new Date(now());
      await db.query(
        `WITH gone AS (DELETE FROM session_revocations WHERE tenant_id = $1 AND revoked_until <= $4)
         INSERT INTO session_revocations (tenant_id, sid, revoked_until) VALUES ($1, $2, $3)
         ON CONFLICT (tenant_id, sid) DO UPDATE SET revoked_until = GREATEST(session_revocations.revoked_until, EXCLUDED.revoked_until)`,
        { bind: [tenantId, sid, new Date(at.getTime() + Math.max(1, Math.ceil(ttlMs))), at] },
      );
    },
    async isRevoked(tenantId, sid) {
      const [rows] = await db.query("SELECT 1 FROM session_revocations WHERE tenant_id = $1 AND sid = $2 AND revoked_until > $3", {
        bind: [tenantId, sid, new Date(now())],
      });
      return rows.length > 0;
    },
  };
}

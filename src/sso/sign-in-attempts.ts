import type { Redis } from "../platform/redis.js";
import { AppError } from "../platform/errors.js";

/**
 * What an authorization request left for its callback (PKCE verifier, ID token nonce, redirect URI
 * and the flow's own fields), kept server-side for {@link ATTEMPT_TTL_SECONDS} and taken at most
 * once: a replayed callback finds nothing. In Redis, so that any process may finish what another
 * began; without REDIS_URL (one process only) in memory.
 */
export interface SignInAttempts {
  /** Stores under `key` unless something is stored there already; false when it was. */
  put(key: string, value: object): Promise<boolean>;
  /** The value under `key`, removed in the same step; null when absent, taken or expired. */
  take<T>(key: string): Promise<T | null>;
}

/** Ten minutes to sign in at the provider: long enough for a password manager, short for a leaked URL. */
export const ATTEMPT_TTL_SECONDS = 600;

function storeDown(cause: unknown): AppError {
  return new AppError({ code: "UNAVAILABLE", reason: "SIGN_IN_STORE_UNAVAILABLE", message: "Sign-in is unavailable: its state store cannot be reached; try again shortly", cause });
}

/** The two commands the attempts need: a single Redis and a Redis Cluster both have them (the keys carry hash tags). */
export type AttemptsRedis = Pick<Redis, "set" | "getdel">;

export function createRedisSignInAttempts(redis: AttemptsRedis): SignInAttempts {
  return {
    async put(key, value) {
      const ok = await redis.set(key, JSON.stringify(value), "EX", ATTEMPT_TTL_SECONDS, "NX").catch((err) => Promise.reject(storeDown(err)));
      return ok === "OK";
    },
    async take<T>(key: string) {
      const raw = await redis.getdel(key).catch((err) => Promise.reject(storeDown(err)));
      return raw === null ? null : (JSON.parse(raw) as T);
    },
  };
}

export function createMemorySignInAttempts(now: () => number = Date.now): SignInAttempts {
  const entries = new Map<string, { value: string; expiresAt: number }>();
  const sweep = () => {
    const t = now();
    for (const [k, e] of entries) if (e.expiresAt <= t) entries.delete(k);
  };
  return {
    async put(key, value) {
      sweep();
      if (entries.has(key)) return false;
      entries.set(key, { value: JSON.stringify(value), expiresAt: now() + ATTEMPT_TTL_SECONDS * 1000 });
      return true;
    },
    async take<T>(key: string) {
      sweep();
      const e = entries.get(key);
      entries.delete(key);
      return e ? (JSON.parse(e.value) as T) : null;
    },
  };
}

import { randomBytes } from "node:crypto";
import type { RedisClient } from "./redis.js";

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until a slot frees up; 0 when allowed. */
  retryAfterSeconds: number;
}

/** Sliding-window log limiter: at most `limit` hits in any window of `windowMs`. */
export interface RateLimiter {
  /** Takes `cost` hits at once (a batch of events counts its items), all or none. */
  hit(key: string, limit: number, windowMs: number, cost?: number): Promise<RateLimitDecision>;
}

/**
 * Atomic in one script: trim the window, count, add `cost` unique members only when they all fit
 * under the limit (refused hits do not extend a caller's wait). Time comes from the Redis server so several
 * service processes with skewed clocks share one window.
 */
const SLIDING_WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local cost = tonumber(ARGV[4])
local count = redis.call('ZCARD', KEYS[1])
if count + cost <= limit then
  for i = 1, cost do redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. now .. ':' .. i) end
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - count - cost, 0}
end
-- The wait until enough hits leave the window for this cost (a cost above the limit never fits).
local oldest = redis.call('ZRANGE', KEYS[1], math.max(0, count + cost - limit - 1), math.max(0, count + cost - limit - 1), 'WITHSCORES')
local wait = (oldest[2] and tonumber(oldest[2]) or now) + window - now
return {0, 0, wait}
`;

export function createRedisRateLimiter(redis: RedisClient): RateLimiter {
  redis.defineCommand("slidingWindowHit", { numberOfKeys: 1, lua: SLIDING_WINDOW });
  // A hit's member must be unique across processes: a random tag of this limiter and a counter.
  // Random bytes per hit cost a call into OpenSSL on every request (about 2% of a Recommend).
  const tag = randomBytes(8).toString("hex");
  let hits = 0;
  return {
    async hit(key, limit, windowMs, cost = 1) {
      const member = `${tag}${(hits++).toString(36)}`;
      const [allowed, remaining, waitMs] = (await (
        redis as unknown as { slidingWindowHit(k: string, w: number, l: number, m: string, c: number): Promise<number[]> }
      ).slidingWindowHit(key, windowMs, limit, member, cost)) as [number, number, number];
      return {
        allowed: allowed === 1,
        limit,
        remaining,
        retryAfterSeconds: allowed === 1 ? 0 : Math.max(1, Math.ceil(waitMs / 1000)),
      };
    },
  };
}

/** How often (in hits) windows with no hit left in them are dropped, so that keys seen once (an IP, a client_id) do not stay forever. */
const SWEEP_EVERY_HITS = 1000;

/** Single-node default: the same algorithm over an in-process map. */
export function createMemoryRateLimiter(now: () => number = Date.now): RateLimiter & { trackedKeys(): number } {
  const windows = new Map<string, { hits: number[]; windowMs: number }>();
  let hitsSinceSweep = 0;
  const sweep = (t: number) => {
    for (const [key, w] of windows) if (w.hits[w.hits.length - 1] <= t - w.windowMs) windows.delete(key);
  };
  return {
    async hit(key, limit, windowMs, cost = 1) {
      const t = now();
      if (++hitsSinceSweep >= SWEEP_EVERY_HITS) {
        hitsSinceSweep = 0;
        sweep(t);
      }
      const hits = (windows.get(key)?.hits ?? []).filter((h) => h > t - windowMs);
      windows.set(key, { hits, windowMs });
      if (hits.length + cost <= limit) {
        for (let i = 0; i < cost; i++) hits.push(t);
        return { allowed: true, limit, remaining: limit - hits.length, retryAfterSeconds: 0 };
      }
      const freeing = hits[Math.min(hits.length - 1, Math.max(0, hits.length + cost - limit - 1))] ?? t;
      return { allowed: false, limit, remaining: 0, retryAfterSeconds: Math.max(1, Math.ceil((freeing + windowMs - t) / 1000)) };
    },
    trackedKeys: () => windows.size,
  };
}

import { randomBytes } from "node:crypto";
import { leasedRateLimiter, type LeaseOptions, type TakeSlots } from "./rate-limit-leases.js";
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
 * Atomic in one script: give back a lease's unused slots (rate-limit-leases.ts), trim the window,
 * count, and add `cost` unique members only when they all fit under the limit (refused hits do not
 * extend a caller's wait), plus up to `extra` more for the caller's lease, never more than an
 * eighth of what is left. Time comes from the Redis server so several service processes with
 * skewed clocks share one window.
 * ARGV: window ms, limit, member, cost, extra, [member to give back, its first and last slot].
 */
const SLIDING_WINDOW = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
if ARGV[6] then
  local unused = {}
  for i = tonumber(ARGV[7]), tonumber(ARGV[8]) do unused[#unused + 1] = ARGV[6] .. ':' .. i end
  redis.call('ZREM', KEYS[1], unpack(unused))
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local cost = tonumber(ARGV[4])
local count = redis.call('ZCARD', KEYS[1])
if count + cost <= limit then
  local granted = cost + math.min(tonumber(ARGV[5]), math.floor((limit - count - cost) / 8))
  for i = 1, granted do redis.call('ZADD', KEYS[1], now, ARGV[3] .. ':' .. i) end
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit - count - granted, 0, granted}
end
-- The wait until enough hits leave the window for this cost (a cost above the limit never fits).
local oldest = redis.call('ZRANGE', KEYS[1], math.max(0, count + cost - limit - 1), math.max(0, count + cost - limit - 1), 'WITHSCORES')
local wait = (oldest[2] and tonumber(oldest[2]) or now) + window - now
return {0, 0, wait, 0}
`;

type SlidingWindowHit = (key: string, windowMs: number, limit: number, member: string, cost: number, extra: number, ...giveBack: Array<string | number>) => Promise<number[]>;

/** The shared window in Redis, taken a lease at a time (rate-limit-leases.ts). */
export function createRedisRateLimiter(redis: RedisClient, options: LeaseOptions = {}): RateLimiter {
  redis.defineCommand("slidingWindowHit", { numberOfKeys: 1, lua: SLIDING_WINDOW });
  const slidingWindowHit = (redis as unknown as { slidingWindowHit: SlidingWindowHit }).slidingWindowHit.bind(redis);
  // A take's member must be unique across processes: a random tag of this limiter and a counter.
  // Random bytes per take cost a call into OpenSSL on every request (about 2% of a Recommend).
  const tag = randomBytes(8).toString("hex");
  let takes = 0;
  const take: TakeSlots = async ({ key, limit, windowMs, cost, extra, member, giveBack }) => {
    const back = giveBack ? [giveBack.member, giveBack.from, giveBack.to] : [];
    const [allowed, remaining, waitMs, granted] = await slidingWindowHit(key, windowMs, limit, member, cost, extra, ...back);
    return { allowed: allowed === 1, remaining, waitMs, granted };
  };
  return leasedRateLimiter(take, () => `${tag}${(takes++).toString(36)}`, options);
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

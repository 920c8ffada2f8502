import type { Redis } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { unavailable } from "../platform/errors.js";

/** One limited counter a returned offer consumes (the core's CounterCheck, minus its bookkeeping). */
export interface CounterReservation {
  key: string;
  limit: number;
  increment: number;
  ttlSeconds?: number;
}

/** An unconditional increment (conversions and conversion spend, which no decision can refuse). */
export interface CounterIncrement {
  key: string;
  by: number;
  ttlSeconds?: number;
}

/** A negative outcome a suppression policy may rest an offer for (the core's RecentOutcome). */
export interface NegativeOutcome {
  offerId: string;
  outcome: string;
  at: string;
}

/** How long a customer's latest negative outcome per offer is kept for suppression policies. */
export const NEGATIVE_OUTCOME_TTL_SECONDS = 90 * 86_400;

/** Beta-Bernoulli evidence of one offer in one context bucket. */
export interface AdaptiveEvidence {
  successes: number;
  trials: number;
}

/**
 * The counters Recommend reads and consumes: frequency caps and budgets, adaptive evidence and the
 * decision count. Keys are the core's suffixes; the store puts them under `t:{<tenantId>}:`.
 */
export interface CounterStore {
  read(tenantId: string, keys: string[]): Promise<Record<string, number>>;
  /**
   * Reserves each group in order, all or nothing per group: a group's counters are incremented only
   * when none would pass its limit (a check with increment 0 only requires `current < limit`), and a
   * later group sees what earlier ones took. One round trip; returns per group whether it was taken.
   */
  reserve(tenantId: string, groups: CounterReservation[][]): Promise<boolean[]>;
  /** Gives back what `reserve` took, when the decision could not be stored. */
  release(tenantId: string, reservations: CounterReservation[]): Promise<void>;
  readEvidence(tenantId: string, keys: readonly string[]): Promise<Record<string, AdaptiveEvidence>>;
  /** One more success (a positive outcome) for the key. */
  addSuccess(tenantId: string, key: string): Promise<void>;
  increment(tenantId: string, increments: CounterIncrement[]): Promise<void>;
  /** Keeps the customer's latest negative outcome per offer. */
  recordNegative(tenantId: string, customerId: string, outcome: NegativeOutcome): Promise<void>;
  negatives(tenantId: string, customerId: string): Promise<NegativeOutcome[]>;
  /**
   * Counts one decision unless `quota` is spent and, when it counts, one more trial (an impression)
   * for each of `trialKeys`, atomically and in one round trip. Returns the new count, or null when
   * the quota was spent (and nothing was counted).
   */
  countDecision(tenantId: string, quota: number | null, trialKeys: readonly string[]): Promise<number | null>;
  /** Takes back what `countDecision` counted, when the decision could not be stored. */
  uncountDecision(tenantId: string, trialKeys: readonly string[]): Promise<void>;
  decisions(tenantId: string): Promise<number>;
  /** Deletes every counter of the tenant (workspace reset). */
  resetTenant(tenantId: string): Promise<void>;
}

/**
 * KEYS: every group's keys, in order. ARGV: the number of groups, then per group its key count,
 * then per key its limit, increment and TTL. Returns 1 (taken) or 0 (refused) per group.
 */
const RESERVE = `
local groups = tonumber(ARGV[1])
local a = 2
local k = 1
local taken = {}
for g = 1, groups do
  local n = tonumber(ARGV[a])
  a = a + 1
  local ok = 1
  for i = 0, n - 1 do
    local current = tonumber(redis.call('GET', KEYS[k + i]) or '0')
    local limit = tonumber(ARGV[a + i * 3])
    local increment = tonumber(ARGV[a + i * 3 + 1])
    if (increment == 0 and current >= limit) or (increment > 0 and current + increment > limit) then ok = 0 end
  end
  if ok == 1 then
    for i = 0, n - 1 do
      local increment = tonumber(ARGV[a + i * 3 + 1])
      if increment > 0 then
        redis.call('INCRBY', KEYS[k + i], increment)
        local ttl = tonumber(ARGV[a + i * 3 + 2])
        if ttl > 0 and redis.call('TTL', KEYS[k + i]) < 0 then redis.call('EXPIRE', KEYS[k + i], ttl) end
      end
    end
  end
  taken[g] = ok
  a = a + n * 3
  k = k + n
end
return taken
`;

/** KEYS: the decision counter, then each trial's evidence hash. ARGV: the quota (-1 for none), then each trial's field. */
const COUNT_DECISION = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local quota = tonumber(ARGV[1])
if quota >= 0 and current >= quota then return -1 end
for i = 2, #KEYS do redis.call('HINCRBY', KEYS[i], ARGV[i], 1) end
return redis.call('INCR', KEYS[1])
`;

const DECISIONS = "decisions";
/**
 * Evidence lives in one hash per context bucket (`ad:<bucket>`), two fields per offer
 * (`<offerId>:s`, `<offerId>:t`), so a decision reads all its candidates' evidence with one HMGET
 * instead of one command per offer. `key` is the core's `<offerId>|<bucket>`.
 */
function evidenceSlot(key: string): { hash: string; offerId: string } {
  const at = key.indexOf("|");
  return { hash: `ad:${key.slice(at + 1)}`, offerId: key.slice(0, at) };
}
const negativesKey = (customerId: string) => `neg:${encodeURIComponent(customerId)}`;

type Scripted = Redis & {
  reserveCounters(numKeys: number, ...args: Array<string | number>): Promise<number[]>;
  countDecision(numKeys: number, ...args: Array<string | number>): Promise<number>;
};

/**
 * Caps and budgets cannot be honoured without their counters, so a dead Redis fails the decision
 * closed and fast: 503 COUNTERS_UNAVAILABLE, never a silent overshoot and never a hang.
 */
function failClosed(store: CounterStore): CounterStore {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(store)) {
    wrapped[name] = (...args: unknown[]) =>
      (fn as (...a: unknown[]) => Promise<unknown>)(...args).catch((err) => {
        throw unavailable("COUNTERS_UNAVAILABLE", `Counters are unavailable (Redis: ${(err as Error).message})`);
      });
  }
  return wrapped as unknown as CounterStore;
}

export function createRedisCounterStore(redis: Redis): CounterStore {
  return failClosed(redisCounterStore(redis));
}

function redisCounterStore(redis: Redis): CounterStore {
  redis.defineCommand("reserveCounters", { lua: RESERVE });
  redis.defineCommand("countDecision", { lua: COUNT_DECISION });
  const r = redis as Scripted;
  const full = (tenantId: string, keys: string[]) => keys.map((k) => tenantKey(tenantId, k));
  return {
    async read(tenantId, keys) {
      if (!keys.length) return {};
      const values = await redis.mget(...full(tenantId, keys));
      return Object.fromEntries(keys.map((k, i) => [k, Number(values[i] ?? 0)]));
    },
    async reserve(tenantId, groups) {
      if (groups.every((g) => g.length === 0)) return groups.map(() => true);
      const keys = groups.flatMap((g) => full(tenantId, g.map((c) => c.key)));
      const args = [groups.length, ...groups.flatMap((g) => [g.length, ...g.flatMap((c) => [c.limit, c.increment, c.ttlSeconds ?? 0])])];
      return (await r.reserveCounters(keys.length, ...keys, ...args)).map((taken) => taken === 1);
    },
    async release(tenantId, reservations) {
      const pipeline = redis.pipeline();
      for (const c of reservations) if (c.increment > 0) pipeline.decrby(tenantKey(tenantId, c.key), c.increment);
      await pipeline.exec();
    },
    async readEvidence(tenantId, keys) {
      const byHash = new Map<string, Array<{ key: string; offerId: string }>>();
      for (const key of keys) {
        const { hash, offerId } = evidenceSlot(key);
        const group = byHash.get(hash) ?? [];
        group.push({ key, offerId });
        byHash.set(hash, group);
      }
      const out: Record<string, AdaptiveEvidence> = {};
      await Promise.all(
        [...byHash].map(async ([hash, group]) => {
          const values = await redis.hmget(tenantKey(tenantId, hash), ...group.flatMap((g) => [`${g.offerId}:s`, `${g.offerId}:t`]));
          group.forEach(({ key: k }, i) => {
            const [s, t] = [values[2 * i], values[2 * i + 1]];
            if (t !== null) out[k] = { successes: Number(s ?? 0), trials: Number(t) };
          });
        }),
      );
      return out;
    },
    async addSuccess(tenantId, key) {
      const { hash, offerId } = evidenceSlot(key);
      await redis.hincrby(tenantKey(tenantId, hash), `${offerId}:s`, 1);
    },
    async increment(tenantId, increments) {
      if (!increments.length) return;
      const pipeline = redis.pipeline();
      for (const i of increments) {
        const key = tenantKey(tenantId, i.key);
        pipeline.incrby(key, i.by);
        if (i.ttlSeconds) pipeline.expire(key, i.ttlSeconds, "NX");
      }
      await pipeline.exec();
    },
    async recordNegative(tenantId, customerId, outcome) {
      const key = tenantKey(tenantId, negativesKey(customerId));
      await redis.multi().hset(key, outcome.offerId, JSON.stringify(outcome)).expire(key, NEGATIVE_OUTCOME_TTL_SECONDS).exec();
    },
    async negatives(tenantId, customerId) {
      const all = await redis.hgetall(tenantKey(tenantId, negativesKey(customerId)));
      return Object.values(all).map((v) => JSON.parse(v) as NegativeOutcome);
    },
    async countDecision(tenantId, quota, trialKeys) {
      const trials = trialKeys.map(evidenceSlot);
      const n = await r.countDecision(
        1 + trials.length,
        tenantKey(tenantId, DECISIONS),
        ...trials.map(({ hash }) => tenantKey(tenantId, hash)),
        quota ?? -1,
        ...trials.map(({ offerId }) => `${offerId}:t`),
      );
      return n < 0 ? null : n;
    },
    async uncountDecision(tenantId, trialKeys) {
      const pipeline = redis.pipeline().decr(tenantKey(tenantId, DECISIONS));
      for (const { hash, offerId } of trialKeys.map(evidenceSlot)) pipeline.hincrby(tenantKey(tenantId, hash), `${offerId}:t`, -1);
      await pipeline.exec();
    },
    async decisions(tenantId) {
      return Number((await redis.get(tenantKey(tenantId, DECISIONS))) ?? 0);
    },
    async resetTenant(tenantId) {
      // The hash tag keeps a tenant's keys on one Cluster node; SCAN them by pattern in batches.
      // SCAN neither applies nor strips ioredis's keyPrefix; DEL applies it again.
      const prefix = redis.options.keyPrefix ?? "";
      let cursor = "0";
      do {
        const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}${tenantKey(tenantId, "*")}`, "COUNT", 500);
        cursor = next;
        if (found.length) await redis.del(...found.map((k) => k.slice(prefix.length)));
      } while (cursor !== "0");
    },
  };
}

/** The single-node default: the same semantics in one process's memory, without expiry sweeps. */
export function createMemoryCounterStore(now: () => number = Date.now): CounterStore {
  const values = new Map<string, { value: number; expiresAt: number | null }>();
  const evidence = new Map<string, AdaptiveEvidence>();
  const negativeOutcomes = new Map<string, Record<string, NegativeOutcome>>();
  const get = (k: string) => {
    const v = values.get(k);
    if (v && v.expiresAt !== null && v.expiresAt <= now()) {
      values.delete(k);
      return 0;
    }
    return v?.value ?? 0;
  };
  const add = (k: string, by: number, ttlSeconds?: number) => {
    const current = values.get(k);
    const live = current !== undefined && (current.expiresAt === null || current.expiresAt > now());
    values.set(k, {
      value: (live ? current.value : 0) + by,
      expiresAt: live ? current.expiresAt : ttlSeconds ? now() + ttlSeconds * 1000 : null,
    });
  };
  const addEvidence = (full: string, field: keyof AdaptiveEvidence, by: number) => {
    const e = evidence.get(full) ?? { successes: 0, trials: 0 };
    evidence.set(full, { ...e, [field]: e[field] + by });
  };
  const tenantOf = (tenantId: string) => tenantKey(tenantId, "");
  return {
    async read(tenantId, keys) {
      return Object.fromEntries(keys.map((k) => [k, get(tenantKey(tenantId, k))]));
    },
    async reserve(tenantId, groups) {
      return groups.map((group) => {
        const refused = group.some((c) => {
          const current = get(tenantKey(tenantId, c.key));
          return c.increment === 0 ? current >= c.limit : current + c.increment > c.limit;
        });
        if (!refused) for (const c of group) if (c.increment > 0) add(tenantKey(tenantId, c.key), c.increment, c.ttlSeconds);
        return !refused;
      });
    },
    async release(tenantId, reservations) {
      for (const c of reservations) if (c.increment > 0) add(tenantKey(tenantId, c.key), -c.increment);
    },
    async readEvidence(tenantId, keys) {
      return Object.fromEntries(keys.flatMap((k) => {
        const e = evidence.get(tenantKey(tenantId, k));
        return e ? [[k, { ...e }]] : [];
      }));
    },
    async addSuccess(tenantId, key) {
      addEvidence(tenantKey(tenantId, key), "successes", 1);
    },
    async increment(tenantId, increments) {
      for (const i of increments) add(tenantKey(tenantId, i.key), i.by, i.ttlSeconds);
    },
    async recordNegative(tenantId, customerId, outcome) {
      const key = tenantKey(tenantId, negativesKey(customerId));
      negativeOutcomes.set(key, { ...negativeOutcomes.get(key), [outcome.offerId]: outcome });
    },
    async negatives(tenantId, customerId) {
      return Object.values(negativeOutcomes.get(tenantKey(tenantId, negativesKey(customerId))) ?? {});
    },
    async countDecision(tenantId, quota, trialKeys) {
      const k = tenantKey(tenantId, DECISIONS);
      if (quota !== null && get(k) >= quota) return null;
      for (const key of trialKeys) addEvidence(tenantKey(tenantId, key), "trials", 1);
      add(k, 1);
      return get(k);
    },
    async uncountDecision(tenantId, trialKeys) {
      for (const key of trialKeys) addEvidence(tenantKey(tenantId, key), "trials", -1);
      add(tenantKey(tenantId, DECISIONS), -1);
    },
    async decisions(tenantId) {
      return get(tenantKey(tenantId, DECISIONS));
    },
    async resetTenant(tenantId) {
      for (const map of [values, evidence, negativeOutcomes]) for (const k of [...map.keys()]) if (k.startsWith(tenantOf(tenantId))) map.delete(k);
    },
  };
}

import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "./fail-closed.js";
import { customerCounterPrefix } from "../core/counters.js";
import { deleteTenantKeys, type CustomerCounterWipe, type TenantCounterWipe } from "./tenant-counter-wipe.js";
import { entriesByTenant, savedList, unchanged, type SnapshotSource, type TenantChanged } from "./counter-snapshot.js";

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

/**
 * The frequency-cap and budget counters Recommend reads and reserves and Respond adds conversions
 * to. Keys are the core's suffixes; the store puts them under `t:{<tenantId>}:`.
 */
export interface ReservationStore {
  read(tenantId: string, keys: string[]): Promise<Record<string, number>>;
  /**
   * Reserves each group in order, all or nothing per group: a group's counters are incremented only
   * when none would pass its limit (a check with increment 0 only requires `current < limit`), and a
   * later group sees what earlier ones took. One round trip; returns per group whether it was taken.
   */
  reserve(tenantId: string, groups: CounterReservation[][]): Promise<boolean[]>;
  /** Gives back what `reserve` took, when the decision could not be stored. */
  release(tenantId: string, reservations: CounterReservation[]): Promise<void>;
  increment(tenantId: string, increments: CounterIncrement[]): Promise<void>;
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

type Scripted = RedisClient & { reserveCounters(numKeys: number, ...args: Array<string | number>): Promise<number[]> };

export function createRedisReservationStore(redis: RedisClient): ReservationStore {
  redis.defineCommand("reserveCounters", { lua: RESERVE });
  const r = redis as Scripted;
  const full = (tenantId: string, keys: string[]) => keys.map((k) => tenantKey(tenantId, k));
  return failClosed<ReservationStore>({
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
  });
}

/** A tenant's counters as saved: each key (after the tenant prefix), its value and its expiry (epoch ms, or null). */
export interface ReservationSnapshot {
  counters: Array<[key: string, value: number, expiresAt: number | null]>;
}

/**
 * The single-node default: the same semantics in one process's memory, without expiry sweeps.
 * `changed` hears of every tenant whose counters change, for the next save (counter-persistence.ts).
 */
export function createMemoryReservationStore(
  now: () => number = Date.now,
  changed: TenantChanged = unchanged,
): ReservationStore & TenantCounterWipe & CustomerCounterWipe & SnapshotSource {
  const values = new Map<string, { value: number; expiresAt: number | null }>();
  const live = (v: { expiresAt: number | null } | undefined): v is { value: number; expiresAt: number | null } =>
    v !== undefined && (v.expiresAt === null || v.expiresAt > now());
  const get = (k: string) => {
    const v = values.get(k);
    if (v && !live(v)) {
      values.delete(k);
      return 0;
    }
    return v?.value ?? 0;
  };
  const add = (tenantId: string, key: string, by: number, ttlSeconds?: number) => {
    const k = tenantKey(tenantId, key);
    const current = values.get(k);
    const kept = live(current);
    values.set(k, {
      value: (kept ? current.value : 0) + by,
      expiresAt: kept ? current.expiresAt : ttlSeconds ? now() + ttlSeconds * 1000 : null,
    });
    changed(tenantId);
  };
  return {
    name: "reservations",
    async read(tenantId, keys) {
      return Object.fromEntries(keys.map((k) => [k, get(tenantKey(tenantId, k))]));
    },
    async reserve(tenantId, groups) {
      return groups.map((group) => {
        const refused = group.some((c) => {
          const current = get(tenantKey(tenantId, c.key));
          return c.increment === 0 ? current >= c.limit : current + c.increment > c.limit;
        });
        if (!refused) for (const c of group) if (c.increment > 0) add(tenantId, c.key, c.increment, c.ttlSeconds);
        return !refused;
      });
    },
    async release(tenantId, reservations) {
      for (const c of reservations) if (c.increment > 0) add(tenantId, c.key, -c.increment);
    },
    async increment(tenantId, increments) {
      for (const i of increments) add(tenantId, i.key, i.by, i.ttlSeconds);
    },
    async forgetCustomer(tenantId, customerId) {
      const prefix = tenantKey(tenantId, customerCounterPrefix(customerId));
      changed(tenantId);
      return [...values.keys()].filter((k) => k.startsWith(prefix) && values.delete(k)).length;
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(values, tenantId);
      changed(tenantId);
    },
    dump(tenantIds) {
      const out = new Map<string, ReservationSnapshot>();
      for (const [tenantId, entries] of entriesByTenant(values, tenantIds)) {
        const counters = entries.filter(([, v]) => live(v)).map(([key, v]): [string, number, number | null] => [key, v.value, v.expiresAt]);
        if (counters.length) out.set(tenantId, { counters });
      }
      return out;
    },
    load(tenantId, state) {
      for (const [key, value, expiresAt] of savedList<ReservationSnapshot["counters"][number]>(state, "counters")) {
        if (expiresAt === null || expiresAt > now()) values.set(tenantKey(tenantId, key), { value, expiresAt });
      }
    },
  };
}

import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "./fail-closed.js";
import { deleteTenantKeys, type CustomerCounterWipe, type TenantCounterWipe } from "./tenant-counter-wipe.js";
import { entriesByTenant, savedList, unchanged, type SnapshotSource, type TenantChanged } from "./counter-snapshot.js";

/** A negative outcome a suppression policy may rest an offer for (the core's RecentOutcome). */
export interface NegativeOutcome {
  offerId: string;
  outcome: string;
  at: string;
}

/** How long a customer's latest negative outcome per offer is kept for suppression policies. */
export const NEGATIVE_OUTCOME_TTL_SECONDS = 90 * 86_400;

/** Each customer's latest negative outcome per offer: Respond records them, Recommend's suppression reads them. */
export interface NegativeOutcomeStore {
  /** Keeps the customer's latest negative outcome per offer. */
  record(tenantId: string, customerId: string, outcome: NegativeOutcome): Promise<void>;
  forCustomer(tenantId: string, customerId: string): Promise<NegativeOutcome[]>;
}

export const negativesKey = (customerId: string) => `neg:${encodeURIComponent(customerId)}`;

export function createRedisNegativeOutcomeStore(redis: RedisClient): NegativeOutcomeStore {
  return failClosed<NegativeOutcomeStore>({
    async record(tenantId, customerId, outcome) {
      const key = tenantKey(tenantId, negativesKey(customerId));
      await redis.multi().hset(key, outcome.offerId, JSON.stringify(outcome)).expire(key, NEGATIVE_OUTCOME_TTL_SECONDS).exec();
    },
    async forCustomer(tenantId, customerId) {
      const all = await redis.hgetall(tenantKey(tenantId, negativesKey(customerId)));
      return Object.values(all).map((v) => JSON.parse(v) as NegativeOutcome);
    },
  });
}

/**
 * A tenant's negative outcomes as saved: each customer's key (after the tenant prefix), its expiry
 * in epoch ms, and the customer's latest negative outcome per offer.
 */
export interface NegativeOutcomeSnapshot {
  customers: Array<[key: string, expiresAt: number, outcomes: Record<string, NegativeOutcome>]>;
}

/**
 * The single-node default: the same semantics in one process's memory, a customer's outcomes
 * expiring NEGATIVE_OUTCOME_TTL_SECONDS after the latest was recorded, as the Redis key does.
 * `changed` hears of every tenant whose outcomes change, for the next save (counter-persistence.ts).
 */
export function createMemoryNegativeOutcomeStore(
  now: () => number = Date.now,
  changed: TenantChanged = unchanged,
): NegativeOutcomeStore & TenantCounterWipe & CustomerCounterWipe & SnapshotSource {
  const negativeOutcomes = new Map<string, { expiresAt: number; outcomes: Record<string, NegativeOutcome> }>();
  const live = (key: string) => {
    const found = negativeOutcomes.get(key);
    if (found && found.expiresAt <= now()) negativeOutcomes.delete(key);
    return found && found.expiresAt > now() ? found.outcomes : undefined;
  };
  return {
    name: "negatives",
    async record(tenantId, customerId, outcome) {
      const key = tenantKey(tenantId, negativesKey(customerId));
      negativeOutcomes.set(key, { expiresAt: now() + NEGATIVE_OUTCOME_TTL_SECONDS * 1000, outcomes: { ...live(key), [outcome.offerId]: outcome } });
      changed(tenantId);
    },
    async forCustomer(tenantId, customerId) {
      return Object.values(live(tenantKey(tenantId, negativesKey(customerId))) ?? {});
    },
    async forgetCustomer(tenantId, customerId) {
      changed(tenantId);
      return negativeOutcomes.delete(tenantKey(tenantId, negativesKey(customerId))) ? 1 : 0;
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(negativeOutcomes, tenantId);
      changed(tenantId);
    },
    dump(tenantIds) {
      const out = new Map<string, NegativeOutcomeSnapshot>();
      for (const [tenantId, entries] of entriesByTenant(negativeOutcomes, tenantIds)) {
        const customers = entries
          .filter(([, v]) => v.expiresAt > now())
          .map(([key, v]): [string, number, Record<string, NegativeOutcome>] => [key, v.expiresAt, v.outcomes]);
        if (customers.length) out.set(tenantId, { customers });
      }
      return out;
    },
    load(tenantId, state) {
      for (const [key, expiresAt, outcomes] of savedList<NegativeOutcomeSnapshot["customers"][number]>(state, "customers")) {
        if (expiresAt > now()) negativeOutcomes.set(tenantKey(tenantId, key), { expiresAt, outcomes });
      }
    },
  };
}

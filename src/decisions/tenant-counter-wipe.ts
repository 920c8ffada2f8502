import { globEscaped, scanKeys, tenantKey, untaggedTenantKeys, type RedisClient } from "../platform/redis.js";
import { customerCounterPrefix } from "../core/counters.js";
import { failClosed } from "./fail-closed.js";
import { negativesKey } from "./negative-outcome-store.js";

/** Deletes every counter of a tenant (workspace reset): caps, budgets, evidence, negatives, the decision count. */
export interface TenantCounterWipe {
  resetTenant(tenantId: string): Promise<void>;
}

/** GDPR erasure: deletes one customer's counters (frequency caps, kept negative outcomes). */
export interface CustomerCounterWipe {
  /** Returns how many keys it deleted. */
  forgetCustomer(tenantId: string, customerId: string): Promise<number>;
}


/** The customer's frequency counters (by pattern) and negative outcomes (one key). */
export function createRedisCustomerCounterWipe(redis: RedisClient): CustomerCounterWipe {
  return failClosed<CustomerCounterWipe>({
    async forgetCustomer(tenantId, customerId) {
      let deleted = await redis.del(tenantKey(tenantId, negativesKey(customerId)));
      const pattern = `${globEscaped(tenantKey(tenantId, customerCounterPrefix(customerId)))}*`;
      await scanKeys(redis, pattern, async (found) => {
        deleted += await redis.del(...found);
      });
      return deleted;
    },
  });
}

/** The single-node default: each in-memory store forgets its own share of the customer. */
export function createMemoryCustomerCounterWipe(stores: readonly CustomerCounterWipe[]): CustomerCounterWipe {
  return {
    async forgetCustomer(tenantId, customerId) {
      let deleted = 0;
      for (const store of stores) deleted += await store.forgetCustomer(tenantId, customerId);
      return deleted;
    },
  };
}

/**
 * Every key under the tenant's `t:{<tenantId>}:` prefix, whichever store wrote it. The hash tag
 * keeps them in one Cluster slot, so each batch is one DEL; the SCAN still runs on every master,
 * since a slot being migrated has keys on two nodes (docs/redis-cluster.md). Then the tenant's keys
 * whose names the spec fixes outside that tag (the event stream), each by name with its own DEL,
 * since they may hash to any slot.
 */
export function createRedisTenantCounterWipe(redis: RedisClient): TenantCounterWipe {
  return failClosed<TenantCounterWipe>({
    async resetTenant(tenantId) {
      await scanKeys(redis, `${globEscaped(tenantKey(tenantId, ""))}*`, async (found) => {
        await redis.del(...found);
      });
      for (const key of untaggedTenantKeys(tenantId)) await redis.del(key);
    },
  });
}

/** The single-node default: each in-memory store forgets its own share of the tenant. */
export function createMemoryTenantCounterWipe(stores: readonly TenantCounterWipe[]): TenantCounterWipe {
  return {
    async resetTenant(tenantId) {
      for (const store of stores) await store.resetTenant(tenantId);
    },
  };
}

/** For the in-memory stores, whose maps are keyed by `tenantKey(tenantId, …)`. */
export function deleteTenantKeys(map: Map<string, unknown>, tenantId: string): void {
  const prefix = tenantKey(tenantId, "");
  for (const key of [...map.keys()]) if (key.startsWith(prefix)) map.delete(key);
}

import type { Redis } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
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

/** SCAN's glob characters, escaped: a customer id is any text. */
const globEscaped = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/** The customer's frequency counters (by pattern) and negative outcomes (one key). */
export function createRedisCustomerCounterWipe(redis: Redis): CustomerCounterWipe {
  return failClosed<CustomerCounterWipe>({
    async forgetCustomer(tenantId, customerId) {
      const prefix = redis.options.keyPrefix ?? "";
      let deleted = await redis.del(tenantKey(tenantId, negativesKey(customerId)));
      let cursor = "0";
      do {
        const pattern = `${globEscaped(prefix + tenantKey(tenantId, customerCounterPrefix(customerId)))}*`;
        const [next, found] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 500);
        cursor = next;
        if (found.length) deleted += await redis.del(...found.map((k) => k.slice(prefix.length)));
      } while (cursor !== "0");
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

/** Every key under the tenant's `t:{<tenantId>}:` prefix, whichever store wrote it. */
export function createRedisTenantCounterWipe(redis: Redis): TenantCounterWipe {
  return failClosed<TenantCounterWipe>({
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

import type { Bus } from "../platform/bus.js";
import { InvalidatedCache } from "../platform/invalidated-cache.js";
import type { DecisionStore } from "./decision-store.js";

/** Bus channel: one customer's stored attributes changed. */
export const CUSTOMER_CHANNEL = "decisioning.customer.invalidate";

/**
 * Stored customer attributes as Recommend reads them, from each process's memory: keyed
 * `<tenantId>|<customerId>`, so that a write drops one customer everywhere and a workspace reset
 * drops all of a tenant's.
 */
export class CustomerCache {
  private readonly cache: InvalidatedCache<Record<string, unknown>>;

  constructor(bus: Bus, store: Pick<DecisionStore, "customer">) {
    this.cache = new InvalidatedCache(bus, CUSTOMER_CHANNEL, async (key) => {
      const at = key.indexOf("|");
      return (await store.customer(key.slice(0, at), key.slice(at + 1)))?.attributes ?? {};
    });
  }

  listen(): Promise<void> {
    return this.cache.listen();
  }

  /** The customer's stored attributes; {} for a customer never stored. */
  attributes(tenantId: string, customerId: string): Promise<Record<string, unknown>> {
    return this.cache.get(`${tenantId}|${customerId}`);
  }

  /** After a write to the customer: drops it here and in every other process. */
  invalidate(tenantId: string, customerId: string): Promise<void> {
    return this.cache.invalidate(`${tenantId}|${customerId}`);
  }

  /** Drops every customer of the tenant from this process (a workspace reset, announced by its own message). */
  forgetTenant(tenantId: string): void {
    const prefix = `${tenantId}|`;
    this.cache.forgetWhere((key) => key.startsWith(prefix));
  }
}

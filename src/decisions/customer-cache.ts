import type { Bus } from "../platform/bus.js";
import { InvalidatedCache } from "../platform/invalidated-cache.js";
import type { ClvInput } from "../core/index.js";
import type { DecisionStore } from "./decision-store.js";

/** Bus channel: one customer's stored attributes or CLV record changed. */
export const CUSTOMER_CHANNEL = "decisioning.customer.invalidate";

/** Bus channel: a tenant's loaded customer tables changed (a pipeline run); every process drops the tenant's customers. */
export const CUSTOMER_TENANT_CHANNEL = "decisioning.customer.tenant.invalidate";

/** Attributes of a customer from tables other domains load (data ingestion's customer schemas); {} when none. */
export type LoadedAttributesReader = (tenantId: string, customerId: string) => Promise<Record<string, unknown>>;

/** What Recommend knows of a customer before the request's own attributes. */
export interface KnownCustomer {
  /** Loaded attributes overlaid by stored ones; {} for a customer never stored or loaded. */
  attributes: Record<string, unknown>;
  /** The CLV record's score for the tilt of spec 4.14; null without a record. */
  clv: ClvInput | null;
}

/** The CLV domain's read model: a customer's clvScore, or null without a record. */
export type ClvScoreReader = (tenantId: string, customerId: string) => Promise<number | null>;

/**
 * Stored customer attributes and CLV score as Recommend reads them, from each process's memory:
 * keyed `<tenantId>|<customerId>`, so that a write (attributes or a CLV recomputation) drops one
 * customer everywhere and a workspace reset drops all of a tenant's. A miss reads both in parallel,
 * so the CLV tilt adds no round trip to a decision.
 */
export class CustomerCache {
  private readonly cache: InvalidatedCache<KnownCustomer>;

  constructor(
    private readonly bus: Bus,
    store: Pick<DecisionStore, "customer">,
    clvScore: ClvScoreReader | null = null,
    loaded: LoadedAttributesReader | null = null,
  ) {
    this.cache = new InvalidatedCache(bus, CUSTOMER_CHANNEL, async (key) => {
      const at = key.indexOf("|");
      const [tenantId, customerId] = [key.slice(0, at), key.slice(at + 1)];
      const [row, score, fromTables] = await Promise.all([
        store.customer(tenantId, customerId),
        clvScore ? clvScore(tenantId, customerId) : null,
        loaded ? loaded(tenantId, customerId) : {},
      ]);
      // Attributes stored through the customers API are the more deliberate write: they win over loaded ones.
      return { attributes: { ...fromTables, ...(row?.attributes ?? {}) }, clv: score === null ? null : { clvScore: score } };
    });
  }

  async listen(): Promise<void> {
    await this.cache.listen();
    await this.bus.subscribe(CUSTOMER_TENANT_CHANNEL, (tenantId) => this.forgetTenant(tenantId));
  }

  /** After a load of the tenant's customer tables: drops all its customers here and in every other process. */
  async invalidateTenant(tenantId: string): Promise<void> {
    this.forgetTenant(tenantId);
    await this.bus.publish(CUSTOMER_TENANT_CHANNEL, tenantId);
  }

  /** The customer's stored attributes and CLV score. */
  known(tenantId: string, customerId: string): Promise<KnownCustomer> {
    return this.cache.get(`${tenantId}|${customerId}`);
  }

  /** After a write to the customer: drops it here and in every other process. */
  invalidate(tenantId: string, customerId: string): Promise<void> {
    return this.cache.invalidate(`${tenantId}|${customerId}`);
  }

  /** After a bulk write (a CLV run's page): drops those customers everywhere with one message. */
  invalidateMany(tenantId: string, customerIds: readonly string[]): Promise<void> {
    return this.cache.invalidateMany(customerIds.map((id) => `${tenantId}|${id}`));
  }

  /** Drops every customer of the tenant from this process (a workspace reset, announced by its own message). */
  forgetTenant(tenantId: string): void {
    const prefix = `${tenantId}|`;
    this.cache.forgetWhere((key) => key.startsWith(prefix));
  }
}

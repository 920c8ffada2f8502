import type { Sequelize } from "sequelize";
import { selectRows } from "../platform/db.js";
import type { RfmFacts } from "../core/index.js";
import type { CustomerRow, DecisionStore } from "./decision-store.js";

/** One row of a customer's interaction history as the profile shows it. */
export interface InteractionView {
  id: string;
  offer_id: string;
  channel_id: string | null;
  outcome: string;
  at: Date;
}

export interface CustomerExperimentView {
  experiment_id: string;
  experiment_variant: string | null;
  first_at: Date;
}

interface FactsRow {
  customer_id: string;
  first_at: Date | null;
  last_at: Date | null;
  impressions: number;
  value: number;
  customer_created_at: Date | null;
}

/**
 * What the customer-data domains (CLV, the profile) read of the decisions' tables: customers,
 * interactions and recommendations, by tenant and customer, read-only.
 */
export class CustomerHistory {
  constructor(
    private readonly db: Sequelize,
    private readonly store: Pick<DecisionStore, "customer">,
  ) {}

  /** The customer's stored attributes row; null when never stored. */
  customer(tenantId: string, customerId: string): Promise<CustomerRow | null> {
    return this.store.customer(tenantId, customerId);
  }

  /**
   * RFM facts of each customer in one aggregate over the interactions (impressions and outcomes
   * alike, at the time they happened). A stored customer without interactions has its record's
   * creation as first and last; a customer with neither is absent from the map.
   */
  async rfmFacts(tenantId: string, customerIds: readonly string[]): Promise<Map<string, RfmFacts>> {
    const rows = await selectRows<FactsRow>(
      this.db,
      `WITH agg AS (
         SELECT customer_id, min(COALESCE(occurred_at, created_at)) AS first_at, max(COALESCE(occurred_at, created_at)) AS last_at,
           count(*) FILTER (WHERE outcome = 'impression')::int AS impressions, COALESCE(sum(conversion_value), 0)::float8 AS value
         FROM interactions WHERE tenant_id = $1 AND customer_id = ANY($2::text[]) GROUP BY customer_id)
       SELECT ids.customer_id, agg.first_at, agg.last_at, COALESCE(agg.impressions, 0) AS impressions, COALESCE(agg.value, 0) AS value,
         c.created_at AS customer_created_at
       FROM unnest($2::text[]) AS ids (customer_id)
       LEFT JOIN agg ON agg.customer_id = ids.customer_id
       LEFT JOIN customers c ON c.tenant_id = $1 AND c.customer_id = ids.customer_id`,
      [tenantId, customerIds],
    );
    const facts = new Map<string, RfmFacts>();
    for (const r of rows) {
      const first = r.first_at ?? r.customer_created_at;
      const last = r.last_at ?? r.customer_created_at;
      if (!first || !last) continue;
      facts.set(r.customer_id, { firstAt: first.getTime(), lastAt: last.getTime(), impressions: Number(r.impressions), conversionValue: Number(r.value) });
    }
    return facts;
  }

  /**
   * The next page of the tenant's customer ids after `after`, in id order: customers with a stored
   * record or with interactions. Each side walks its (tenant_id, customer_id) index and stops at
   * `limit`, so a page costs the same at customer 100 and at customer 100,000.
   */
  async customerIdsAfter(tenantId: string, after: string, limit: number): Promise<string[]> {
    const rows = await selectRows<{ customer_id: string }>(
      this.db,
      `SELECT customer_id FROM (
         (SELECT customer_id FROM customers WHERE tenant_id = $1 AND customer_id > $2 ORDER BY customer_id LIMIT $3)
         UNION
         (SELECT DISTINCT customer_id FROM interactions WHERE tenant_id = $1 AND customer_id > $2 ORDER BY customer_id LIMIT $3)
       ) AS ids ORDER BY customer_id LIMIT $3`,
      [tenantId, after, limit],
    );
    return rows.map((r) => r.customer_id);
  }

  /** The customer's latest interactions (impressions and outcomes), newest first: the profile's history. */
  async recentInteractions(tenantId: string, customerId: string, limit: number): Promise<InteractionView[]> {
    return selectRows<InteractionView>(
      this.db,
      `SELECT id, offer_id, channel_id, outcome, COALESCE(occurred_at, created_at) AS at FROM interactions
       WHERE tenant_id = $1 AND customer_id = $2 ORDER BY created_at DESC LIMIT $3`,
      [tenantId, customerId, limit],
    );
  }

  /** The experiments whose variants decided for the customer, with the first decision in each. */
  async customerExperiments(tenantId: string, customerId: string): Promise<CustomerExperimentView[]> {
    return selectRows<CustomerExperimentView>(
      this.db,
      `SELECT experiment_id, experiment_variant, min(created_at) AS first_at FROM recommendations
       WHERE tenant_id = $1 AND customer_id = $2 AND experiment_id IS NOT NULL GROUP BY experiment_id, experiment_variant ORDER BY first_at`,
      [tenantId, customerId],
    );
  }
}

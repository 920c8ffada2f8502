import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";
import type { ClvResult, ClvSegment, RfmFacts } from "../core/index.js";

export interface ClvRow {
  customer_id: string;
  clv_score: number;
  predicted_revenue: number;
  churn_probability: number;
  rfm_recency: number;
  rfm_frequency: number;
  rfm_monetary: number;
  segment: ClvSegment;
  segment_since: Date;
  computed_at: Date;
}

interface FactsRow {
  customer_id: string;
  first_at: Date | null;
  last_at: Date | null;
  impressions: number;
  value: number;
  customer_created_at: Date | null;
}

/** CLV records and the interaction aggregates they are computed from. Tenant first, always. */
export class ClvStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * RFM facts of each customer in one aggregate over the interactions (impressions and outcomes
   * alike, at the time they happened). A customer with neither interactions nor a stored record
   * has no facts: it is absent from the map.
   */
  async facts(tenantId: string, customerIds: readonly string[]): Promise<Map<string, RfmFacts>> {
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

  async record(tenantId: string, customerId: string): Promise<ClvRow | null> {
    const [row] = await selectRows<ClvRow>(this.db, "SELECT * FROM clv_records WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]);
    return row ?? null;
  }

  /** The customer's clvScore alone, for Recommend's customer cache; null without a record. */
  async score(tenantId: string, customerId: string): Promise<number | null> {
    const [row] = await selectRows<{ clv_score: number }>(this.db, "SELECT clv_score FROM clv_records WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]);
    return row?.clv_score ?? null;
  }

  /** The current segment of each customer that has a record. */
  async segments(tenantId: string, customerIds: readonly string[]): Promise<Map<string, ClvSegment>> {
    const rows = await selectRows<{ customer_id: string; segment: ClvSegment }>(
      this.db,
      "SELECT customer_id, segment FROM clv_records WHERE tenant_id = $1 AND customer_id = ANY($2::text[])",
      [tenantId, customerIds],
    );
    return new Map(rows.map((r) => [r.customer_id, r.segment]));
  }

  /**
   * Replaces the records in one statement. `segment_since` survives a recomputation that keeps the
   * segment, so segment membership has a stable start.
   */
  async save(tenantId: string, records: ReadonlyArray<{ customerId: string; result: ClvResult }>, computedAt: Date): Promise<ClvRow[]> {
    if (!records.length) return [];
    const columns = ["customer_id", "clv_score", "predicted_revenue", "churn_probability", "rfm_recency", "rfm_frequency", "rfm_monetary", "segment"] as const;
    const values = records.map(({ customerId, result: r }) => [customerId, r.clvScore, r.predictedRevenue, r.churnProbability, r.rfmRecency, r.rfmFrequency, r.rfmMonetary, r.segment]);
    return execReturning<ClvRow>(
      this.db,
      `INSERT INTO clv_records (tenant_id, ${columns.join(", ")}, segment_since, computed_at)
       SELECT $1, v.customer_id, v.clv_score, v.predicted_revenue, v.churn_probability, v.rfm_recency, v.rfm_frequency, v.rfm_monetary, v.segment, $3, $3
       FROM jsonb_to_recordset($2::jsonb) AS v (customer_id text, clv_score int, predicted_revenue float8, churn_probability float8,
         rfm_recency int, rfm_frequency int, rfm_monetary float8, segment text)
       ON CONFLICT (tenant_id, customer_id) DO UPDATE SET clv_score = EXCLUDED.clv_score, predicted_revenue = EXCLUDED.predicted_revenue,
         churn_probability = EXCLUDED.churn_probability, rfm_recency = EXCLUDED.rfm_recency, rfm_frequency = EXCLUDED.rfm_frequency,
         rfm_monetary = EXCLUDED.rfm_monetary, computed_at = EXCLUDED.computed_at,
         segment_since = CASE WHEN clv_records.segment = EXCLUDED.segment THEN clv_records.segment_since ELSE EXCLUDED.segment_since END,
         segment = EXCLUDED.segment
       RETURNING *`,
      [tenantId, JSON.stringify(values.map((v) => Object.fromEntries(columns.map((c, i) => [c, v[i]])))), computedAt],
    );
  }

  /**
   * The next page of the tenant's customer ids after `after`, in id order: customers with a stored
   * record or with interactions. Each side walks its (tenant_id, customer_id) index and stops at
   * `limit`, so a page costs the same at customer 100 and at customer 100,000.
   */
  async customerPage(tenantId: string, after: string, limit: number): Promise<string[]> {
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
}

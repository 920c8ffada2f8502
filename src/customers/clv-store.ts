import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";
import type { ClvResult, ClvSegment } from "../core/index.js";

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

/** CLV records. Tenant first, always. */
export class ClvStore {
  constructor(private readonly db: Sequelize) {}

  async record(tenantId: string, customerId: string): Promise<ClvRow | null> {
    const [row] = await selectRows<ClvRow>(this.db, "SELECT * FROM clv_records WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]);
    return row ?? null;
  }

  /** The customer's clvScore alone, for Recommend's customer cache; null without a record. */
  async score(tenantId: string, customerId: string): Promise<number | null> {
    const [row] = await selectRows<{ clv_score: number }>(this.db, "SELECT clv_score FROM clv_records WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]);
    return row?.clv_score ?? null;
  }

  /**
   * The first `limit` distinct ids of `ids` in the database's text order: merging the keyset pages of
   * several sources must compare as their `customer_id > $after` did, and the collation is the
   * database's, not JavaScript's.
   */
  async firstIds(ids: readonly string[], limit: number): Promise<string[]> {
    const rows = await selectRows<{ id: string }>(this.db, "SELECT DISTINCT id FROM unnest($1::text[]) AS id ORDER BY id LIMIT $2", [ids, limit]);
    return rows.map((r) => r.id);
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
}

import type { Sequelize } from "sequelize";
import { selectRows } from "../platform/db.js";

/**
 * What a tenant's decisions and outcomes add up to over a window: the read model other domains
 * (the alert metrics, the decision-funnel monitor) read instead of the decision tables. Every
 * figure is a plain count or sum; the rates are formed by the reader (docs/alerts.md).
 */
export interface DecisionWindowStats {
  /** Recommendations stored in the window, one per decision. */
  decisions: number;
  /** Decisions that returned no offer. */
  emptyDecisions: number;
  /** Decisions that carry funnel figures (stored since migration 0010). */
  measuredDecisions: number;
  degradedDecisions: number;
  /** Candidates that passed eligibility, summed over the measured decisions. */
  qualifiedCandidates: number;
  /** Of those, the ones contact policy dropped. */
  suppressedCandidates: number;
  /** The decisions that selected the most-selected offer of the window. */
  topOfferDecisions: number;
  /** Recommend's impression rows and outcomes of an impression-category type. */
  impressions: number;
  /** Recommended offers (or unattributed outcomes) with an outcome of a positive-category type. */
  positiveOutcomes: number;
  /** Recommended offers (or unattributed outcomes) with an outcome of type `click`. */
  clicks: number;
  /** Sum of conversionValue over the outcomes recorded in the window. */
  revenue: number;
}

/** One tenant's decision funnel over a window, for the decision-funnel monitor. */
export interface TenantFunnel {
  tenantId: string;
  decisions: number;
  emptyDecisions: number;
  qualifiedCandidates: number;
  suppressedCandidates: number;
}

/** Reads over [from, to) by the time rows were stored; tenant first. */
export class DecisionStats {
  constructor(private readonly db: Sequelize) {}

  async window(tenantId: string, from: Date, to: Date): Promise<DecisionWindowStats> {
    const bind = [tenantId, from, to];
    const [[decisions], [outcomes]] = await Promise.all([
      selectRows<Omit<DecisionWindowStats, "impressions" | "positiveOutcomes" | "clicks" | "revenue">>(
        this.db,
        `WITH r AS (
           SELECT id, offers, qualified_count, suppressed_count, degraded_scoring FROM recommendations
           WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3)
         SELECT count(*)::int AS "decisions",
           count(*) FILTER (WHERE jsonb_array_length(offers) = 0)::int AS "emptyDecisions",
           count(qualified_count)::int AS "measuredDecisions",
           count(*) FILTER (WHERE degraded_scoring)::int AS "degradedDecisions",
           coalesce(sum(qualified_count), 0)::int AS "qualifiedCandidates",
           coalesce(sum(suppressed_count), 0)::int AS "suppressedCandidates",
           coalesce((SELECT max(n) FROM (
             SELECT count(DISTINCT r.id) AS n FROM r, jsonb_array_elements(r.offers) AS o GROUP BY o->>'offerId') AS per_offer), 0)::int
             AS "topOfferDecisions"
         FROM r`,
        bind,
      ),
      selectRows<Pick<DecisionWindowStats, "impressions" | "positiveOutcomes" | "clicks" | "revenue">>(
        this.db,
        // Recommend's own impression rows carry no idempotency key; everything else came through
        // Respond. A recommended offer (recommendation and rank) accepts or is clicked once, however
        // many positive outcomes it gets, so the rates stay shares of impressions.
        `SELECT count(*) FILTER (WHERE i.idempotency_key IS NULL OR t.category = 'impression')::int AS "impressions",
           count(DISTINCT coalesce(i.recommendation_id::text || ':' || i.rank, i.id::text))
             FILTER (WHERE i.idempotency_key IS NOT NULL AND t.category = 'positive')::int AS "positiveOutcomes",
           count(DISTINCT coalesce(i.recommendation_id::text || ':' || i.rank, i.id::text))
             FILTER (WHERE i.idempotency_key IS NOT NULL AND i.outcome = 'click')::int AS "clicks",
           coalesce(sum(i.conversion_value) FILTER (WHERE i.idempotency_key IS NOT NULL), 0)::float8 AS "revenue"
         FROM interactions i
         LEFT JOIN catalog_entries t ON t.tenant_id = i.tenant_id AND t.kind = 'outcome_type' AND t.key = i.outcome AND t.deleted_at IS NULL
         WHERE i.tenant_id = $1 AND i.created_at >= $2 AND i.created_at < $3`,
        bind,
      ),
    ]);
    return { ...decisions, ...outcomes };
  }

  /**
   * The funnel of every tenant that decided in [from, to) or in the `since` lookback before it:
   * a tenant that went quiet is still listed once more, with zeros, so that an alert raised on its
   * last busy window can be cleared.
   */
  funnelAcrossTenants(since: Date, from: Date, to: Date): Promise<TenantFunnel[]> {
    return selectRows<TenantFunnel>(
      this.db,
      `SELECT tenant_id AS "tenantId",
         count(*) FILTER (WHERE created_at >= $2)::int AS "decisions",
         count(*) FILTER (WHERE created_at >= $2 AND jsonb_array_length(offers) = 0)::int AS "emptyDecisions",
         coalesce(sum(qualified_count) FILTER (WHERE created_at >= $2), 0)::int AS "qualifiedCandidates",
         coalesce(sum(suppressed_count) FILTER (WHERE created_at >= $2), 0)::int AS "suppressedCandidates"
       FROM recommendations WHERE created_at >= $1 AND created_at < $3
       GROUP BY tenant_id ORDER BY tenant_id`,
      [since, from, to],
    );
  }
}

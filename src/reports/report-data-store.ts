import type { Sequelize } from "sequelize";
import { selectRows } from "../platform/db.js";
import type { ReportPeriod } from "./report-period.js";

/**
 * The read-only aggregates behind the data sources (docs/reports.md). Every figure is computed in
 * PostgreSQL over the tenant's rows in [from, to), on the tenant-leading and BRIN created_at indexes
 * (migrations 0004, 0010); Node receives one row per output row. Counting follows the decisions'
 * read model (src/decisions/decision-stats.ts) so reports and alert metrics agree: Recommend's
 * impression rows carry no idempotency key, a recommended offer (recommendation and rank) clicks or
 * converts once however many positive outcomes it gets, revenue sums conversionValue of outcomes.
 */

/** Per-row measures shared by offer and channel performance; `g` is the grouping. */
const MEASURES = `
  count(DISTINCT i.recommendation_id) FILTER (WHERE i.idempotency_key IS NULL)::int AS recommendations,
  count(*) FILTER (WHERE i.idempotency_key IS NULL OR t.category = 'impression')::int AS impressions,
  count(DISTINCT coalesce(i.recommendation_id::text || ':' || i.rank, i.id::text))
    FILTER (WHERE i.idempotency_key IS NOT NULL AND i.outcome = 'click')::int AS clicks,
  count(DISTINCT coalesce(i.recommendation_id::text || ':' || i.rank, i.id::text))
    FILTER (WHERE i.idempotency_key IS NOT NULL AND t.category = 'positive')::int AS positive,
  count(*) FILTER (WHERE i.idempotency_key IS NOT NULL AND t.category = 'negative')::int AS negative,
  coalesce(sum(i.conversion_value) FILTER (WHERE i.idempotency_key IS NOT NULL), 0)::float8 AS revenue`;

const FROM_INTERACTIONS = `
  FROM interactions i
  LEFT JOIN catalog_entries t ON t.tenant_id = i.tenant_id AND t.kind = 'outcome_type' AND t.key = i.outcome AND t.deleted_at IS NULL
  WHERE i.tenant_id = $1 AND i.created_at >= $2 AND i.created_at < $3`;

/** A share of impressions in percent (0-100), rounded in SQL to four decimals; null without impressions. */
const pct = (num: string) => `CASE WHEN impressions > 0 THEN round(100.0 * ${num} / impressions, 4)::float8 END`;

export interface PerformanceRow {
  recommendations: number;
  impressions: number;
  clicks: number;
  positive: number;
  negative: number;
  ctr: number | null;
  conversion_rate: number | null;
  revenue: number;
}

export interface FunnelTotals {
  decisions: number;
  considered: number;
  qualified: number;
  contactable: number;
  selected: number;
}

export class ReportDataStore {
  constructor(private readonly db: Sequelize) {}

  offerPerformance(tenantId: string, p: ReportPeriod, limit: number): Promise<(PerformanceRow & { offer: string; offer_id: string })[]> {
    return selectRows(
      this.db,
      `WITH g AS (SELECT i.offer_id, ${MEASURES} ${FROM_INTERACTIONS} GROUP BY i.offer_id)
       SELECT coalesce(o.name, g.offer_id::text) AS offer, g.offer_id::text AS offer_id, recommendations, impressions, clicks, positive, negative,
         ${pct("clicks")} AS ctr, ${pct("positive")} AS conversion_rate, revenue
       FROM g LEFT JOIN offers o ON o.tenant_id = $1 AND o.id = g.offer_id
       ORDER BY impressions DESC, offer, offer_id LIMIT $4`,
      [tenantId, p.from, p.to, limit],
    );
  }

  channelPerformance(tenantId: string, p: ReportPeriod): Promise<(PerformanceRow & { channel: string | null; placement: string | null })[]> {
    return selectRows(
      this.db,
      `WITH g AS (SELECT i.channel_id, i.placement_id, ${MEASURES} ${FROM_INTERACTIONS} GROUP BY i.channel_id, i.placement_id)
       SELECT coalesce(c.name, g.channel_id::text) AS channel, coalesce(pl.name, g.placement_id::text) AS placement,
         recommendations, impressions, clicks, positive, negative, ${pct("clicks")} AS ctr, ${pct("positive")} AS conversion_rate, revenue
       FROM g
       LEFT JOIN catalog_entries c ON c.tenant_id = $1 AND c.id = g.channel_id AND c.kind = 'channel'
       LEFT JOIN catalog_entries pl ON pl.tenant_id = $1 AND pl.id = g.placement_id AND pl.kind = 'placement'
       ORDER BY impressions DESC, channel NULLS LAST, placement NULLS LAST`,
      [tenantId, p.from, p.to],
    );
  }

  /**
   * Decisions per local day or hour of the zone, every bucket of the period listed (zeros
   * included), with the decisions that returned no offer and those whose scoring degraded.
   */
  decisionVolume(tenantId: string, p: ReportPeriod, granularity: "day" | "hour"): Promise<{ bucket: string; decisions: number; empty: number; degraded: number }[]> {
    const format = granularity === "day" ? "YYYY-MM-DD" : `YYYY-MM-DD"T"HH24":00"`;
    return selectRows(
      this.db,
      `WITH r AS (
         SELECT date_trunc($5, created_at AT TIME ZONE $4) AS local_bucket, count(*)::int AS decisions,
           count(*) FILTER (WHERE jsonb_array_length(offers) = 0)::int AS empty,
           count(*) FILTER (WHERE degraded_scoring)::int AS degraded
         FROM recommendations WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3 GROUP BY 1),
       buckets AS (
         SELECT generate_series(date_trunc($5, $2::timestamptz AT TIME ZONE $4), ($3::timestamptz AT TIME ZONE $4) - interval '1 microsecond',
           ('1 ' || $5)::interval) AS local_bucket)
       SELECT to_char(b.local_bucket, '${format}') AS bucket, coalesce(r.decisions, 0) AS decisions,
         coalesce(r.empty, 0) AS empty, coalesce(r.degraded, 0) AS degraded
       FROM buckets b LEFT JOIN r USING (local_bucket) ORDER BY b.local_bucket`,
      [tenantId, p.from, p.to, p.timeZone, granularity],
    );
  }

  /**
   * The decision funnel over the decisions of the period that have a stored trace and funnel
   * figures: candidates the trace considered (selected + rejected), those that passed eligibility,
   * those contact policy kept, and those selected.
   */
  async funnel(tenantId: string, p: ReportPeriod): Promise<FunnelTotals> {
    const [row] = await selectRows<FunnelTotals>(
      this.db,
      `SELECT count(*)::int AS decisions,
         coalesce(sum(t.selected_count + t.rejected_count), 0)::int AS considered,
         coalesce(sum(r.qualified_count), 0)::int AS qualified,
         coalesce(sum(r.qualified_count - coalesce(r.suppressed_count, 0)), 0)::int AS contactable,
         coalesce(sum(t.selected_count), 0)::int AS selected
       FROM recommendations r
       JOIN decision_traces t ON t.tenant_id = r.tenant_id AND t.recommendation_id = r.id
       WHERE r.tenant_id = $1 AND r.created_at >= $2 AND r.created_at < $3 AND r.qualified_count IS NOT NULL`,
      [tenantId, p.from, p.to],
    );
    return row;
  }

  /** Alert firings (one per rule and evaluation slot: the dedupe key) and their deliveries, per rule. */
  alertHistory(tenantId: string, p: ReportPeriod): Promise<{ rule: string; firings: number; deliveries: number; accepted: number; failed: number; last_fired_at: Date }[]> {
    return selectRows(
      this.db,
      `WITH d AS (
         SELECT split_part(dedupe_key, ':', 2) AS rule_id, count(DISTINCT dedupe_key)::int AS firings, count(*)::int AS deliveries,
           count(*) FILTER (WHERE status = 'accepted')::int AS accepted, count(*) FILTER (WHERE status = 'failed')::int AS failed,
           max(created_at) AS last_fired_at
         FROM notification_deliveries WHERE tenant_id = $1 AND kind = 'alert' AND created_at >= $2 AND created_at < $3
         GROUP BY 1)
       SELECT coalesce(a.name, d.rule_id) AS rule, d.firings, d.deliveries, d.accepted, d.failed, d.last_fired_at
       FROM d LEFT JOIN alert_rules a ON a.tenant_id = $1 AND a.id::text = d.rule_id
       ORDER BY d.firings DESC, rule`,
      [tenantId, p.from, p.to],
    );
  }
}

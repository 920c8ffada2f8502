import type { DecisionWindowStats } from "../decisions/decision-stats.js";
import type { RequestStats } from "../observability/operational-signals.js";

/** Where a metric's value comes from: the decision read model, or the request statistics of every process. */
type MetricSource =
  | { from: "decisions"; value: (s: DecisionWindowStats) => number | null }
  | { from: "requests"; value: (r: RequestStats, tenantId: string, from: Date, to: Date) => Promise<number | null> };

/** A share, or null when its denominator is 0: no data is not a rate of 0. */
const share = (part: number, whole: number): number | null => (whole > 0 ? part / whole : null);

/**
 * The nine recognized metrics of spec 4.6 and their formulas (docs/alerts.md states the same).
 * Every window is [slot − windowMinutes, slot), by the time rows were stored.
 */
export const ALERT_METRICS: Readonly<Record<string, MetricSource>> = {
  acceptance_rate: { from: "decisions", value: (s) => share(s.positiveOutcomes, s.impressions) },
  ctr: { from: "decisions", value: (s) => share(s.clicks, s.impressions) },
  revenue: { from: "decisions", value: (s) => s.revenue },
  selection_frequency: { from: "decisions", value: (s) => share(s.topOfferDecisions, s.decisions) },
  degraded_scoring_rate: { from: "decisions", value: (s) => share(s.degradedDecisions, s.measuredDecisions) },
  suppression_rate: { from: "decisions", value: (s) => share(s.suppressedCandidates, s.qualifiedCandidates) },
  empty_candidate_rate: { from: "decisions", value: (s) => share(s.emptyDecisions, s.decisions) },
  latency_p99: { from: "requests", value: (r, tenantId, from, to) => r.latencyP99Ms(tenantId, from, to) },
  http_5xx_count: { from: "requests", value: (r, tenantId, from, to) => r.http5xxCount(tenantId, from, to) },
};

export function isRecognizedMetric(metric: string): boolean {
  return Object.hasOwn(ALERT_METRICS, metric);
}

export interface MetricSources {
  decisionWindow(tenantId: string, from: Date, to: Date): Promise<DecisionWindowStats>;
  requestStats: RequestStats;
}

/**
 * Measures metrics for one evaluation run. Rules of a tenant that share a window share one read of
 * the decision tables, which computes all seven decision metrics at once.
 */
export function createMetricReader(sources: MetricSources) {
  const windows = new Map<string, Promise<DecisionWindowStats>>();
  return async (tenantId: string, metric: string, from: Date, to: Date): Promise<number | null> => {
    const source = ALERT_METRICS[metric];
    if (source.from === "requests") return source.value(sources.requestStats, tenantId, from, to);
    const key = `${tenantId}:${from.toISOString()}:${to.toISOString()}`;
    let stats = windows.get(key);
    if (!stats) windows.set(key, (stats = sources.decisionWindow(tenantId, from, to)));
    return source.value(await stats);
  };
}

import type { TenantFunnel } from "../decisions/decision-stats.js";
import type { HealthAlerts } from "../observability/operational-signals.js";
import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";

const WINDOW_MS = 30 * 60_000;

/**
 * The documented thresholds (docs/alerts.md): a tenant's funnel is unhealthy when, over the last 30
 * minutes and at least MIN_DECISIONS decisions, contact policy suppressed more than 80% of the
 * eligible candidates, or more than half the decisions returned nothing.
 */
export const FUNNEL_THRESHOLDS = { suppression_rate: 0.8, empty_candidate_rate: 0.5 } as const;
export const MIN_DECISIONS = 50;

export interface FunnelSource {
  funnelAcrossTenants(since: Date, from: Date, to: Date): Promise<TenantFunnel[]>;
}

/**
 * Spec 6: every 30 minutes, per tenant, the decision funnel's suppression_rate and
 * empty_candidate_rate against FUNNEL_THRESHOLDS; over the threshold raises the health alert
 * `funnel:<metric>`, anything else clears it (fewer than MIN_DECISIONS decisions included: too
 * little traffic is no evidence of a broken funnel). Raising and clearing are idempotent, so a
 * repeated slot changes nothing, and a run at any instant judges the 30 minutes before it.
 */
export function createDecisionFunnelMonitor(deps: { funnel: FunnelSource; healthAlerts: HealthAlerts; logger: Logger }): ScheduledJob {
  return {
    name: "alerts.decision-funnel",
    schedule: { cron: "*/30 * * * *", timezone: "UTC" },
    // Spec 4.21: the tick runs "the scheduled evaluations", so that operators who drive the cron
    // routes from outside (SCHEDULER=off) still get the monitor.
    route: "tick",
    async run(slot: Date) {
      const from = new Date(slot.getTime() - WINDOW_MS);
      const tenants = await deps.funnel.funnelAcrossTenants(new Date(from.getTime() - WINDOW_MS), from, slot);
      for (const t of tenants) {
        const rates = {
          suppression_rate: t.qualifiedCandidates > 0 ? t.suppressedCandidates / t.qualifiedCandidates : 0,
          empty_candidate_rate: t.decisions > 0 ? t.emptyDecisions / t.decisions : 0,
        };
        for (const metric of Object.keys(FUNNEL_THRESHOLDS) as Array<keyof typeof FUNNEL_THRESHOLDS>) {
          const key = `funnel:${metric}`;
          const threshold = FUNNEL_THRESHOLDS[metric];
          if (t.decisions >= MIN_DECISIONS && rates[metric] > threshold) {
            await deps.healthAlerts.raise(t.tenantId, {
              key,
              severity: "warning",
              message: `${metric} was ${rates[metric].toFixed(3)} over the last 30 minutes (${t.decisions} decisions), above ${threshold}`,
              details: { metric, value: rates[metric], threshold, decisions: t.decisions, windowStart: from.toISOString(), windowEnd: slot.toISOString() },
            });
            deps.logger.warn({ tenantId: t.tenantId, metric, value: rates[metric] }, "decision funnel unhealthy");
          } else {
            await deps.healthAlerts.clear(t.tenantId, key);
          }
        }
      }
    },
  };
}

import { alertVerdict, crossesThreshold, statusAfterDelivery, type AlertOperator, type AlertStatus } from "../core/index.js";
import type { Dispatcher, OutboundMessage } from "../notifications/outbound.js";
import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import { parseChannels } from "./alert-channels.js";
import { createMetricReader, isRecognizedMetric, type MetricSources } from "./alert-metrics.js";
import type { AlertRuleRow, AlertRuleStore } from "./alert-rule-store.js";

/** Rules evaluated at once: dispatches wait on the network, and the pool has a few connections. */
const CONCURRENCY = 4;

export interface AlertEvaluatorDeps {
  store: AlertRuleStore;
  metrics: MetricSources;
  dispatcher: Dispatcher;
  logger: Logger;
}

/**
 * The evaluator of spec 3.6, run on every scheduler tick (and by `/api/cron/tick`): each enabled
 * rule of every tenant, its metric over [slot − windowMinutes, slot), the threshold, the cooldown,
 * and the dispatch to the rule's channels.
 *
 * Idempotent per slot: a rule whose evaluation of the slot was recorded is skipped when the slot
 * runs again, and a slot that stopped between dispatch and record sends again with the same
 * dedupeKey (`alert:<ruleId>:<slot>`), which a destination that accepted it is not sent twice.
 * A rule whose metric could not be read is left for the retry: the run fails after the others.
 */
export function createAlertEvaluator(deps: AlertEvaluatorDeps): ScheduledJob {
  return {
    name: "alerts.evaluate",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    route: "tick",
    async run(slot: Date) {
      const rules = await deps.store.dueAcrossTenants(slot);
      const measure = createMetricReader(deps.metrics);
      const failures: unknown[] = [];
      let next = 0;
      const worker = async () => {
        while (next < rules.length) {
          const rule = rules[next++];
          await evaluate(deps, rule, slot, measure).catch((err) => {
            failures.push(err);
            deps.logger.error({ err, tenantId: rule.tenant_id, ruleId: rule.id }, "alert rule not evaluated; the slot's retry evaluates it again");
          });
        }
      };
      await Promise.all(Array.from({ length: Math.min(CONCURRENCY, rules.length) }, worker));
      if (failures.length) throw new AggregateError(failures, `${failures.length} of ${rules.length} alert rules were not evaluated`);
    },
  };
}

async function evaluate(deps: AlertEvaluatorDeps, rule: AlertRuleRow, slot: Date, measure: ReturnType<typeof createMetricReader>): Promise<void> {
  const recognized = isRecognizedMetric(rule.metric);
  const from = new Date(slot.getTime() - rule.window_minutes * 60_000);
  const value = recognized ? await measure(rule.tenant_id, rule.metric, from, slot) : null;
  const verdict = alertVerdict({
    recognized,
    triggered: crossesThreshold(rule.operator as AlertOperator, value, rule.threshold),
    lastFiredAt: rule.last_fired_at,
    cooldownMinutes: rule.cooldown_minutes,
    at: slot,
  });
  let status: AlertStatus;
  let lastFiredAt = rule.last_fired_at;
  if ("status" in verdict) {
    status = verdict.status;
  } else {
    const { destinations } = parseChannels(rule.channels);
    const results = await deps.dispatcher.dispatch(rule.tenant_id, destinations, alertMessage(rule, value!, from, slot));
    status = statusAfterDelivery(results.map((r) => r.accepted));
    // Only a delivered alert starts the cooldown: one that reached nobody is tried again next tick.
    if (status === "fired") lastFiredAt = slot;
    deps.logger.info(
      { tenantId: rule.tenant_id, ruleId: rule.id, metric: rule.metric, value, status, failed: results.filter((r) => !r.accepted).map((r) => r.error) },
      "alert rule triggered",
    );
  }
  await deps.store.recordEvaluation(rule.tenant_id, rule.id, { status, lastFiredAt, slot });
}

/** One message per rule and evaluation slot; a retried slot sends nothing twice. */
const alertDedupeKey = (ruleId: string, slot: Date) => `alert:${ruleId}:${slot.toISOString()}`;

/** The rule and slot an alert's dedupe key names, or null for another key. */
export function alertOfDedupeKey(key: string): { ruleId: string; slot: Date } | null {
  const m = /^alert:([^:]+):(.+)$/.exec(key);
  const slot = m ? new Date(m[2]) : null;
  return m && slot && !Number.isNaN(slot.getTime()) ? { ruleId: m[1], slot } : null;
}

/** Spec 6 leaves the payload open; this is what docs/alerts.md documents. */
function alertMessage(rule: AlertRuleRow, value: number, from: Date, slot: Date): OutboundMessage {
  const condition = `${rule.metric} ${rule.operator} ${rule.threshold}`;
  return {
    kind: "alert",
    dedupeKey: alertDedupeKey(rule.id, slot),
    subject: `Alert: ${rule.name} (${condition})`,
    text: `Alert rule "${rule.name}" triggered: ${rule.metric} was ${value} over ${from.toISOString()} to ${slot.toISOString()} (condition ${condition}).`,
    payload: {
      event: "alert.fired",
      tenantId: rule.tenant_id,
      rule: { id: rule.id, name: rule.name, metric: rule.metric, operator: rule.operator, threshold: rule.threshold, windowMinutes: rule.window_minutes },
      value,
      windowStart: from.toISOString(),
      windowEnd: slot.toISOString(),
      firedAt: slot.toISOString(),
    },
  };
}

import type { Sequelize } from "sequelize";
import { AlertRuleService as AlertRuleServiceDesc } from "../../gen/decisioning/v1/alerts_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { DecisionStats } from "../decisions/decision-stats.js";
import type { Dispatcher } from "../notifications/outbound.js";
import type { HealthAlerts, RequestStats } from "../observability/operational-signals.js";
import type { Transaction } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ProviderDirectory } from "./alert-channels.js";
import { alertOfDedupeKey, createAlertEvaluator } from "./alert-evaluator.js";
import { AlertRuleService } from "./alert-rule-service.js";
import { AlertRuleStore } from "./alert-rule-store.js";
import { createDecisionFunnelMonitor } from "./decision-funnel-monitor.js";

export interface AlertsOptions {
  db: Sequelize;
  auditLog: AuditLog;
  /** The decisions' read model: the seven decision metrics and the funnel. */
  decisionStats: DecisionStats;
  logger: Logger;
  /** What the alerts take from the operations domains: the way out, the request statistics, health alerts, the providers. */
  dispatcher: Dispatcher;
  requestStats: RequestStats;
  healthAlerts: HealthAlerts;
  providers: ProviderDirectory;
}

export interface Alerts {
  services: ServiceRegistration[];
  /** `alerts.evaluate` (every minute, also `/api/cron/tick`) and `alerts.decision-funnel` (every 30 minutes). */
  jobs: ScheduledJob[];
  /** Deletes the tenant's alert rules inside a workspace reset's transaction. */
  wipeTenant(t: Transaction, tenantId: string): Promise<void>;
  /** The rules that send through a notification provider, in words (notifications' ProviderUsers). */
  providerUsers(tenantId: string, providerId: string, t: Transaction): Promise<string[]>;
}

/** Alert rules (spec 2.8, 3.6, 4.6) and the decision-funnel monitor (spec 6): built once at start-up. */
export function createAlerts(o: AlertsOptions): Alerts {
  const store = new AlertRuleStore(o.db);
  const rules = new AlertRuleService(o.db, store, o.auditLog, o.providers);
  // An alert that reached nobody at its slot and that the redelivery sweep delivered later.
  o.dispatcher.onRedelivered("alert", async (tenantId, dedupeKey, result) => {
    const alert = alertOfDedupeKey(dedupeKey);
    if (alert && result.accepted) await store.recordLateDelivery(tenantId, alert.ruleId, alert.slot);
  });
  return {
    services: [{ service: AlertRuleServiceDesc, impl: rules as unknown as Record<string, Handler> }],
    jobs: [
      createAlertEvaluator({
        store,
        metrics: { decisionWindow: (tenantId, from, to) => o.decisionStats.window(tenantId, from, to), requestStats: o.requestStats },
        dispatcher: o.dispatcher,
        logger: o.logger,
      }),
      createDecisionFunnelMonitor({ funnel: o.decisionStats, healthAlerts: o.healthAlerts, logger: o.logger }),
    ],
    wipeTenant: (t, tenantId) => store.deleteAll(t, tenantId),
    providerUsers: async (tenantId, providerId, t) => (await store.namesUsingProvider(tenantId, providerId, t)).map((name) => `alert rule "${name}"`),
  };
}

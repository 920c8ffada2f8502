/**
 * The pure rules of alert evaluation (spec 2.8, 3.6): comparing a metric's value with a threshold,
 * and which status an evaluation leaves a rule in. No clock: the evaluator passes the slot time.
 */

export const ALERT_OPERATORS = ["gt", "lt", "gte", "lte", "eq"] as const;
export type AlertOperator = (typeof ALERT_OPERATORS)[number];

export const ALERT_STATUSES = ["ok", "fired", "cooldown", "delivery_failed", "unsupported_metric"] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

export function isAlertOperator(value: string): value is AlertOperator {
  return (ALERT_OPERATORS as readonly string[]).includes(value);
}

/**
 * Whether `value` crosses the threshold. A window without data (null, e.g. a rate over no
 * impressions) never triggers: an alert on "acceptance below 5%" must not fire on an idle night.
 * `eq` compares with a relative tolerance, since rates are quotients of counts.
 */
export function crossesThreshold(operator: AlertOperator, value: number | null, threshold: number): boolean {
  if (value === null || !Number.isFinite(value)) return false;
  switch (operator) {
    case "gt":
      return value > threshold;
    case "lt":
      return value < threshold;
    case "gte":
      return value >= threshold;
    case "lte":
      return value <= threshold;
    case "eq":
      return Math.abs(value - threshold) <= 1e-9 * Math.max(1, Math.abs(threshold));
  }
}

/** What an evaluation does next: settle on a status, or dispatch and settle by the deliveries. */
export type AlertVerdict = { status: "ok" | "cooldown" | "unsupported_metric" } | { dispatch: true };

/**
 * Spec 3.6: an unrecognized metric never fires; a rule that did not trigger is ok; one that
 * triggered within `cooldownMinutes` after `lastFiredAt` is in cooldown and sends nothing;
 * otherwise it dispatches.
 */
export function alertVerdict(r: {
  recognized: boolean;
  triggered: boolean;
  lastFiredAt: Date | null;
  cooldownMinutes: number;
  at: Date;
}): AlertVerdict {
  if (!r.recognized) return { status: "unsupported_metric" };
  if (!r.triggered) return { status: "ok" };
  if (r.lastFiredAt && r.at.getTime() - r.lastFiredAt.getTime() < r.cooldownMinutes * 60_000) return { status: "cooldown" };
  return { dispatch: true };
}

/** After dispatch: fired when at least one destination accepted, delivery_failed when none did. */
export function statusAfterDelivery(accepted: readonly boolean[]): "fired" | "delivery_failed" {
  return accepted.some(Boolean) ? "fired" : "delivery_failed";
}

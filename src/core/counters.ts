/**
 * The counter contract between the pure core and the service's Redis (docs/decisioning-core.md, "Counters and reservations").
 *
 * The core names every counter it needs as a key suffix; the service prefixes it with
 * `t:{<tenantId>}:` (so one tenant's keys share a Redis Cluster slot), reads current values before
 * deciding and passes them in `counters`, and after ranking atomically reserves the selected
 * offers' counters in rank order. Counted windows are fixed and aligned to the Unix epoch: the key
 * carries the window index, so a new window is simply a new key and old ones expire by TTL. (A
 * customer can therefore see up to twice a cap across a window boundary; sliding windows would need
 * per-event storage.) Budgets count per UTC calendar period instead (periodWindow). Spend is counted in integer micro-units so every counter is an integer.
 */

export type CounterKind = "frequency_cap" | "budget_impressions" | "budget_spend" | "budget_conversions";

/**
 * One limit a candidate must respect. It admits the candidate when `current + increment <= limit`;
 * a check with `increment` 0 only reads a limit that another path consumes (conversions are counted
 * by Respond) and admits while `current < limit`.
 */
export interface CounterCheck {
  key: string;
  limit: number;
  increment: number;
  /** Seconds until the key's window ends: the TTL to set when the key is created. Absent = no expiry. */
  ttlSeconds?: number;
  policyId: string;
  kind: CounterKind;
}

/** A check that consumes something; the service reserves these for every offer it returns. */
export type Reservation = CounterCheck;

export const MICROS_PER_UNIT = 1_000_000;

/** Currency units to the integer micro-units that spend counters hold. */
export function toMicros(amount: number): number {
  return Math.round(amount * MICROS_PER_UNIT);
}

/** Key of the impressions of one scope value (offer, category or channel id) to one customer. */
export function frequencyCounterKey(
  customerId: string,
  scope: "offer" | "category" | "channel",
  scopeValue: string,
  windowSeconds: number,
  nowMs: number,
): string {
  return `fc:${segment(customerId)}:${scope}:${segment(scopeValue)}${windowSuffix(windowSeconds, nowMs)}`;
}

/** What every frequency counter of one customer starts with: the GDPR erasure deletes them all. */
export function customerCounterPrefix(customerId: string): string {
  return `fc:${segment(customerId)}:`;
}

/**
 * Budget periods are calendar windows in UTC: `day` from midnight, `week` from Monday (ISO weeks),
 * `month` from the 1st; `lifetime` never resets.
 */
export type BudgetPeriod = "lifetime" | "day" | "week" | "month";

/** The UTC calendar window holding `nowMs`: its key label and the seconds until it ends. */
export function periodWindow(period: Exclude<BudgetPeriod, "lifetime">, nowMs: number): { label: string; ttlSeconds: number } {
  const now = new Date(nowMs);
  const y = now.getUTCFullYear();
  const m = now.getUTCMonth();
  const d = now.getUTCDate();
  let start: number;
  let end: number;
  if (period === "month") {
    start = Date.UTC(y, m, 1);
    end = Date.UTC(y, m + 1, 1);
  } else if (period === "week") {
    start = Date.UTC(y, m, d - ((now.getUTCDay() + 6) % 7));
    end = start + 7 * 86_400_000;
  } else {
    start = Date.UTC(y, m, d);
    end = start + 86_400_000;
  }
  const date = new Date(start).toISOString().slice(0, period === "month" ? 7 : 10);
  return { label: `${period}:${date}`, ttlSeconds: Math.max(1, Math.ceil((end - nowMs) / 1000)) };
}

/** Key of one budget's usage of one metric in the period holding `nowMs`. */
export function budgetCounterKey(
  budgetId: string,
  metric: "impressions" | "spend" | "conversions",
  period: BudgetPeriod,
  nowMs: number,
): string {
  return `bg:${segment(budgetId)}:${metric}${period === "lifetime" ? "" : `:${periodWindow(period, nowMs).label}`}`;
}

/** Seconds from `nowMs` to the end of its fixed window (at least 1). */
export function windowTtlSeconds(windowSeconds: number, nowMs: number): number {
  const nowSeconds = Math.floor(nowMs / 1000);
  return Math.max(1, (windowIndex(windowSeconds, nowMs) + 1) * windowSeconds - nowSeconds);
}

/** Whether a check admits its candidate given the value the service read (absent = 0). */
export function admits(check: CounterCheck, counters: Readonly<Record<string, number>>): boolean {
  const current = counters[check.key] ?? 0;
  return check.increment === 0 ? current < check.limit : current + check.increment <= check.limit;
}

/**
 * Checks that consume something, one per key: two caps on the same scope and window share a
 * counter, and the stricter limit wins so the key is incremented once.
 */
export function reservationsOf(checks: readonly CounterCheck[]): Reservation[] {
  const byKey = new Map<string, Reservation>();
  for (const check of checks) {
    if (check.increment === 0) continue;
    const seen = byKey.get(check.key);
    if (!seen || check.limit < seen.limit) byKey.set(check.key, check);
  }
  return [...byKey.values()];
}

/** The rejection stage of a check that blocks: caps have their own, budgets are contact policy. */
export function counterStage(check: CounterCheck): "frequency_cap" | "contact_policy" {
  return check.kind === "frequency_cap" ? "frequency_cap" : "contact_policy";
}

/** A check as reasons name it: `frequency cap <id>` or `budget <id> <metric>`. */
export function counterLabel(check: CounterCheck): string {
  return check.kind === "frequency_cap" ? `frequency cap ${check.policyId}` : `budget ${check.policyId} ${check.kind.replace("budget_", "")}`;
}

function windowIndex(windowSeconds: number, nowMs: number): number {
  return Math.floor(Math.floor(nowMs / 1000) / windowSeconds);
}

function windowSuffix(windowSeconds: number, nowMs: number): string {
  return `:${windowSeconds}s:${windowIndex(windowSeconds, nowMs)}`;
}

/** Characters encodeURIComponent leaves as they are: an id made only of them needs no copy. */
const URI_SAFE = /^[\w.~-]*$/;

/** Ids are URI-encoded so a `:` or `{` inside an id can neither split a key nor move its hash slot. */
function segment(id: string): string {
  return URI_SAFE.test(id) ? id : encodeURIComponent(id);
}

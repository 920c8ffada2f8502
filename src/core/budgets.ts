/**
 * Budget allocations (spec 2.19): shared limits on impressions, spend and conversions for the whole
 * tenant (`global`) or one category, offer or channel (`scopeId` names it). Recommend consumes one
 * impression and `costPerImpression` of spend per returned offer; conversions and
 * `costPerConversion` are added by Respond, so the decision only checks that they are not exhausted.
 */
import type { Offer } from "./catalog.js";
import { budgetCounterKey, periodWindow, toMicros, type BudgetPeriod, type CounterCheck } from "./counters.js";

/** The limits and costs of a budget: an allocation's, or an offer's own `budget` field. */
export interface OfferBudget {
  maxImpressions?: number;
  maxSpend?: number;
  maxConversions?: number;
  costPerImpression?: number;
  costPerConversion?: number;
  /** The UTC calendar window the limits apply to; default `lifetime` (`day` is a per-day cap). */
  period?: BudgetPeriod;
}

export interface BudgetAllocation extends OfferBudget {
  id: string;
  name?: string;
  scope: "global" | "category" | "offer" | "channel";
  scopeId?: string;
  /** A paused budget limits nothing. */
  status?: "active" | "paused";
}

/** The budget an offer's own `budget` field stands for, or null when it sets no limit. */
export function offerBudgetAllocation(offer: Offer): BudgetAllocation | null {
  const budget = offer.budget;
  if (!budget || (budget.maxImpressions === undefined && budget.maxSpend === undefined && budget.maxConversions === undefined)) {
    return null;
  }
  return { id: `offer:${offer.id}`, scope: "offer", scopeId: offer.id, ...budget };
}

/** The counters `budget` holds against `offer` (none when the budget's scope excludes it). */
export function budgetChecks(budget: BudgetAllocation, offer: Offer, channelId: string | null, nowMs: number): CounterCheck[] {
  if (budget.status === "paused" || !inScope(budget, offer, channelId)) return [];
  return allocationChecks(budget, nowMs);
}

/** The counters of an active budget already known to be in scope (channel coupling asks per channel). */
export function allocationChecks(budget: BudgetAllocation, nowMs: number): CounterCheck[] {
  const period = budget.period ?? "lifetime";
  const ttl = period === "lifetime" ? {} : { ttlSeconds: periodWindow(period, nowMs).ttlSeconds };
  const checks: CounterCheck[] = [];
  if (budget.maxImpressions !== undefined) {
    checks.push({
      key: budgetCounterKey(budget.id, "impressions", period, nowMs),
      limit: budget.maxImpressions,
      increment: 1,
      ...ttl,
      policyId: budget.id,
      kind: "budget_impressions",
    });
  }
  if (budget.maxSpend !== undefined) {
    checks.push({
      key: budgetCounterKey(budget.id, "spend", period, nowMs),
      limit: toMicros(budget.maxSpend),
      increment: toMicros(budget.costPerImpression ?? 0),
      ...ttl,
      policyId: budget.id,
      kind: "budget_spend",
    });
  }
  if (budget.maxConversions !== undefined) {
    checks.push({
      key: budgetCounterKey(budget.id, "conversions", period, nowMs),
      limit: budget.maxConversions,
      increment: 0,
      ...ttl,
      policyId: budget.id,
      kind: "budget_conversions",
    });
  }
  return checks;
}

function inScope(budget: BudgetAllocation, offer: Offer, channelId: string | null): boolean {
  switch (budget.scope) {
    case "global":
      return true;
    case "offer":
      return budget.scopeId === offer.id;
    case "category":
      return budget.scopeId !== undefined && budget.scopeId === offer.categoryId;
    case "channel":
      return budget.scopeId !== undefined && budget.scopeId === channelId;
  }
}

/**
 * Channel caps and channel budgets for decisions that have no channel of their own.
 *
 * A decision with a channel checks its channel's caps and budgets in contact policy, for every
 * offer alike. A decision without one (no `channel`, and slots that share none) still sends each
 * offer out on some channel: its creative's own, else the slot's, else its placement's. Channel
 * coupling asks these limits of that channel, so an exhausted channel cap or budget stops the
 * creative there, and the creative it chooses takes that channel's counters with it.
 *
 * The checks of a channel do not depend on the offer, so they are built once per channel and
 * decision, and only for a tenant that has channel-scoped caps or budgets at all.
 */
import { allocationChecks, type BudgetAllocation } from "./budgets.js";
import type { ContactPolicy } from "./contact-policy.js";
import type { CounterCheck } from "./counters.js";
import { scopedCapCheck, type FrequencyCapPolicy } from "./frequency-caps.js";

/** The tenant's channel-scoped frequency caps and active channel budgets, in configuration order. */
export interface ChannelLimits {
  caps: readonly FrequencyCapPolicy[];
  budgets: readonly BudgetAllocation[];
}

/** The channel-scoped limits of a configuration, or null when it has none (most tenants). */
export function channelLimitsOf(config: { contactPolicies: readonly ContactPolicy[]; budgets: readonly BudgetAllocation[] }): ChannelLimits | null {
  const caps = config.contactPolicies.filter((p): p is FrequencyCapPolicy => p.type !== "suppression" && p.scope === "channel");
  // A channel budget without a scopeId matches nothing, as in budgetChecks.
  const budgets = config.budgets.filter((b) => b.scope === "channel" && b.scopeId !== undefined && b.status !== "paused");
  return caps.length || budgets.length ? { caps, budgets } : null;
}

/**
 * Every counter the limits hold against going out on `channelId` to this customer: caps first,
 * then budgets, as contact policy orders an offer's checks.
 */
export function channelLimitChecks(limits: ChannelLimits, customerId: string, channelId: string, nowMs: number): CounterCheck[] {
  const checks: CounterCheck[] = [];
  for (const policy of limits.caps) {
    const check = scopedCapCheck(policy, channelId, customerId, nowMs);
    if (check) checks.push(check);
  }
  for (const budget of limits.budgets) {
    if (budget.scopeId === channelId) checks.push(...allocationChecks(budget, nowMs));
  }
  return checks;
}

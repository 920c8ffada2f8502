import { adaptiveCountKey, budgetChecks, toMicros } from "../core/index.js";
import type { Counters } from "./counters.js";
import type { OutcomeStatus } from "./outcome-mapper.js";
import type { OutcomeRow } from "./outcome-store.js";
import type { CounterIncrement } from "./reservation-store.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** What a newly recorded outcome teaches: adaptive evidence, suppression and budget counters. */
export class OutcomeLearning {
  constructor(private readonly counters: Pick<Counters, "reservations" | "evidence" | "negatives">) {}

  /**
   * First writes only: a positive outcome is a success for the offer's adaptive evidence (when the
   * customer saw the offer within the lookback); a negative one is kept for suppression; a
   * conversion adds to the conversion and spend counters of the budgets over the offer.
   */
  async learn(tenantId: string, compiled: CompiledTenant, row: OutcomeRow, category: string, status: OutcomeStatus): Promise<void> {
    if (category === "positive" && status === "recorded") {
      await this.counters.evidence.addSuccess(tenantId, adaptiveCountKey(row.offer_id, row.context_bucket));
    }
    if (category === "negative") {
      await this.counters.negatives.record(tenantId, row.customer_id, { offerId: row.offer_id, outcome: row.outcome, at: row.occurred_at.toISOString() });
    }
    const offer = compiled.snapshot.offers.find((o) => o.id === row.offer_id);
    if (!offer || !isConversion(row, category)) return;
    const increments: CounterIncrement[] = [];
    const now = Date.now();
    for (const budget of compiled.snapshot.budgets) {
      for (const check of budgetChecks(budget, offer, row.channel_id, now)) {
        if (check.kind === "budget_conversions") increments.push({ key: check.key, by: 1, ttlSeconds: check.ttlSeconds });
        if (check.kind === "budget_spend" && budget.costPerConversion) increments.push({ key: check.key, by: toMicros(budget.costPerConversion), ttlSeconds: check.ttlSeconds });
      }
    }
    await this.counters.reservations.increment(tenantId, increments);
  }
}

/** A conversion: the `conversion` outcome, or any positive outcome that carries a value. */
function isConversion(row: OutcomeRow, category: string): boolean {
  return row.outcome === "conversion" || (category === "positive" && (row.conversion_value ?? 0) > 0);
}

import { adaptiveCountKey, budgetChecks, toMicros } from "../core/index.js";
import type { Counters } from "./counters.js";
import type { Exposure } from "./evidence-store.js";
import type { OutcomeStatus } from "./outcome-mapper.js";
import type { OutcomeRow, OutcomeStore } from "./outcome-store.js";
import type { CounterIncrement } from "./reservation-store.js";
import { ADAPTATION_LOOKBACK_DAYS } from "./respond-service.js";
import type { CompiledTenant } from "./snapshot-compiler.js";

/** An exposure is remembered as long as an outcome can still be attributed to it. */
const REMEMBER_EXPOSURE_SECONDS = ADAPTATION_LOOKBACK_DAYS * 86_400;

/** What a newly recorded outcome teaches: adaptive evidence, suppression and budget counters. */
export class OutcomeLearning {
  constructor(
    private readonly counters: Pick<Counters, "reservations" | "evidence" | "negatives">,
    private readonly exposures: Pick<OutcomeStore, "recentExposure">,
  ) {}

  /**
   * First writes only: a positive outcome is a success for the offer's adaptive evidence (when the
   * customer saw the offer within the lookback), at most one per exposure; a negative one is kept
   * for suppression; a conversion adds to the conversion and spend counters of the budgets over
   * the offer.
   */
  async learn(tenantId: string, compiled: CompiledTenant, row: OutcomeRow, category: string, status: OutcomeStatus): Promise<void> {
    if (category === "positive" && status === "recorded") {
      const exposure = await this.exposureOf(tenantId, row, compiled.impressionOutcomes);
      if (exposure) await this.counters.evidence.addSuccess(tenantId, adaptiveCountKey(row.offer_id, row.context_bucket), exposure);
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

  /**
   * The exposure an outcome's success belongs to, which is also the trial it completes: the
   * returned offer of the recommendation the outcome was attributed to or, without one, the latest
   * exposure the lookback finds (a recommended offer, or an impression row recorded without a
   * recommendation). So a click and a later conversion on one impression, however each was
   * attributed, are one exposure and one success.
   */
  private async exposureOf(tenantId: string, row: OutcomeRow, impressionOutcomes: readonly string[]): Promise<Exposure | null> {
    if (row.recommendation_id) return recommended(row.recommendation_id, row.rank, row.offer_id);
    const since = new Date(row.created_at.getTime() - REMEMBER_EXPOSURE_SECONDS * 1000);
    const found = await this.exposures.recentExposure(tenantId, row.customer_id, row.offer_id, since, impressionOutcomes);
    if (found?.recommendationId) return recommended(found.recommendationId, found.rank, row.offer_id);
    return found?.impressionId ? { id: `imp:${found.impressionId}`, rememberSeconds: REMEMBER_EXPOSURE_SECONDS } : null;
  }
}

/** A returned offer of a recommendation: by rank, which names it even when an offer fills two slots. */
function recommended(recommendationId: string, rank: number | null, offerId: string): Exposure {
  return { id: `rec:${recommendationId}:${rank ?? offerId}`, rememberSeconds: REMEMBER_EXPOSURE_SECONDS };
}

/** A conversion: the `conversion` outcome, or any positive outcome that carries a value. */
function isConversion(row: OutcomeRow, category: string): boolean {
  return row.outcome === "conversion" || (category === "positive" && (row.conversion_value ?? 0) > 0);
}

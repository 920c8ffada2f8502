import type { Decision, Rejection, RejectionStage } from "../core/index.js";
import type { RecommendationRow } from "./decision-store.js";

/**
 * The stages of contact policy (spec 1: "may we contact now"): an offer dropped at one of them was
 * eligible but suppressed. Eligibility, channel, coupling and rank are not suppression.
 */
const SUPPRESSION_STAGES: ReadonlySet<RejectionStage> = new Set<RejectionStage>([
  "contact_policy", "consent", "suppression", "frequency_cap", "maturity_ramp", "guardrail",
]);

/**
 * What the decision-funnel metrics need of one decision (docs/alerts.md), as stored with its
 * recommendation: the candidates that passed eligibility (and so reached contact policy), how many
 * of them contact policy dropped (concurrent reservation refusals included), and whether scoring
 * degraded.
 */
export type DecisionFunnel = Pick<RecommendationRow, "qualified_count" | "suppressed_count" | "degraded_scoring">;

/**
 * Counted from what the decision already holds, one pass over its rejections and no query, so
 * that Recommend's hot path pays nothing noticeable for the metrics. Rejections before ranking are
 * always listed whether or not the decision was explained; `rejectedCount` counts the rank's too.
 */
export function decisionFunnel(decision: Decision, refusals: readonly Rejection[]): DecisionFunnel {
  let ineligible = 0;
  let suppressed = refusals.length;
  for (const r of decision.rejectedOffers) {
    if (r.stage === "eligibility") ineligible++;
    else if (SUPPRESSION_STAGES.has(r.stage)) suppressed++;
  }
  return {
    qualified_count: decision.offers.length + decision.rejectedCount - ineligible,
    suppressed_count: suppressed,
    degraded_scoring: decision.degradedScoring,
  };
}

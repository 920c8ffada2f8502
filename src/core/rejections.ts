/**
 * Why an offer left the decision (spec 2.16 `rejectedOffers[]`). Every stage that drops an offer
 * records exactly one row for it, at the first reason found, so a trace answers "why not X?".
 */
export const REJECTION_STAGES = [
  "eligibility", "contact_policy", "consent", "channel", "suppression",
  "frequency_cap", "maturity_ramp", "guardrail", "coupling", "rank",
] as const;

export type RejectionStage = (typeof REJECTION_STAGES)[number];

export interface Rejection {
  offerId: string;
  offerName?: string;
  stage: RejectionStage;
  reason: string;
  detail?: Record<string, unknown>;
}

/**
 * Spec 1's four stages, and which rejection stage (spec 2.16's `rejectedOffers[].stage`) belongs to
 * which of them. Channel coupling is part of ranking's placement work (it runs early so no model time
 * is spent on offers that cannot be shown).
 */
export const STAGES = [
  { id: "qualification", title: "1. Qualification", about: "Is the offer eligible for this customer?" },
  { id: "contact", title: "2. Contact policy", about: "May we contact the customer with it now?" },
  { id: "scoring", title: "3. Scoring", about: "How likely is the customer to respond?" },
  { id: "ranking", title: "4. Ranking", about: "Placements, channel coupling, constraints and the top N." },
] as const;

export type StageId = (typeof STAGES)[number]["id"];

const REJECTION_STAGES: Record<string, { stage: StageId; words: string }> = {
  eligibility: { stage: "qualification", words: "Not eligible" },
  contact_policy: { stage: "contact", words: "Blocked by a contact policy" },
  guardrail: { stage: "contact", words: "Blocked by a guardrail" },
  consent: { stage: "contact", words: "No consent for this channel" },
  suppression: { stage: "contact", words: "Suppressed after a recent response" },
  frequency_cap: { stage: "contact", words: "Frequency cap reached" },
  maturity_ramp: { stage: "contact", words: "Still ramping up (not yet shown to this customer)" },
  channel: { stage: "ranking", words: "No creative for the channel" },
  coupling: { stage: "ranking", words: "No creative for the requested placements" },
  rank: { stage: "ranking", words: "Not ranked high enough" },
};

export function rejectionStage(code: string): { stage: StageId; words: string } {
  return REJECTION_STAGES[code] ?? { stage: "ranking", words: code };
}

export const OFFER_STATUSES = ["draft", "active", "paused", "archived"] as const;

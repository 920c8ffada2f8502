/**
 * Stage 2, contact policy: may we contact this customer with this offer now? For each qualified
 * offer the checks run in a fixed order and the first block drops it:
 *
 *   emergency exclusion (contact_policy) → guardrails (guardrail) → channel consent (consent)
 *   → suppression after negative outcomes (suppression) → frequency caps (frequency_cap)
 *   → budgets (contact_policy) → maturity ramp (maturity_ramp)
 *
 * Counter values come from the caller (the core never touches Redis). Each surviving offer carries
 * the reservations that selecting it would consume, which the service reserves atomically.
 */
import type { AttributeBag } from "./attributes.js";
import type { Channel, Offer } from "./catalog.js";
import { consentRefusal } from "./consent.js";
import { admits, counterLabel, counterStage, reservationsOf, type CounterCheck, type Reservation } from "./counters.js";
import { budgetChecks, type BudgetAllocation } from "./budgets.js";
import { frequencyCapCheck, type FrequencyCapPolicy } from "./frequency-caps.js";
import { guardrailVerdict, type GuardrailRule } from "./guardrails.js";
import { rampVerdict, type MaturityRamp } from "./maturity-ramp.js";
import { appliesToOffer } from "./offer-scope.js";
import type { Rejection, RejectionStage } from "./rejections.js";
import { Subsequence } from "./subsequence.js";
import { suppressingOutcome, type RecentOutcome, type SuppressionPolicy } from "./suppression.js";

export type ContactPolicy = FrequencyCapPolicy | SuppressionPolicy;

/** The part of a snapshot this stage reads. */
export interface ContactPolicyConfig {
  contactPolicies: ContactPolicy[];
  budgets: BudgetAllocation[];
  guardrails: GuardrailRule[];
  maturityRamp: MaturityRamp | null;
}

/** The part of a request this stage reads. */
export interface ContactPolicyInput {
  customerId: string;
  bag: AttributeBag;
  /** The channel the decision is for; channel-scoped checks apply only when it is known. */
  channel: Channel | null;
  nowMs: number;
  counters: Readonly<Record<string, number>>;
  /** Each offer's counterChecks, when the caller built them already (counter-keys.ts). */
  counterChecks?: ReadonlyMap<Offer, readonly CounterCheck[]>;
  recentOutcomes: readonly RecentOutcome[];
  /** Keep every verdict as a `results` row (for an explanation); otherwise only the rejections. */
  explain: boolean;
}

/** One policy's verdict on one offer (spec 2.16 `contactPolicyResults[]`). */
export interface ContactPolicyRow {
  offerId: string;
  blocked: boolean;
  policyId: string;
  reason: string;
}

/**
 * The offers allowed, in their order, and beside them (same index) the reservations selecting each
 * would consume: two columns rather than a record per offer, since a decision has hundreds.
 */
export interface ContactPolicyOutput {
  allowed: readonly Offer[];
  reservations: Reservation[][];
  results: ContactPolicyRow[];
  rejections: Rejection[];
}

const NO_RESERVATIONS: Reservation[] = Object.freeze([]) as unknown as Reservation[];
const NO_CHECKS: readonly CounterCheck[] = Object.freeze([]);

/** Policy ids of the built-in checks in `contactPolicyResults`. */
export const CONTACT_CHECKS = {
  emergency: "emergency_exclusion",
  consent: "consent",
  maturityRamp: "maturity_ramp",
} as const;

interface Verdict {
  stage: RejectionStage;
  policyId: string;
  blocked: boolean;
  reason: string;
  detail?: Record<string, unknown>;
}

export function applyContactPolicies(offers: readonly Offer[], config: ContactPolicyConfig, input: ContactPolicyInput): ContactPolicyOutput {
  const output: ContactPolicyOutput = { allowed: offers, reservations: [], results: [], rejections: [] };
  const allowed = new Subsequence<Offer, Reservation[]>(offers);
  // Most tenants hold few policies: an offer nothing can block costs no checks, no arrays.
  const perOffer = config.guardrails.length > 0 || input.channel !== null || config.contactPolicies.length > 0 || config.budgets.length > 0 || config.maturityRamp !== null;
  // Consent is the customer's, for the request's channel: the same for every offer.
  const consentRefused = input.channel ? consentRefusal(input.bag.customer, input.channel) : null;
  for (let i = 0; i < offers.length; i++) {
    const offer = offers[i];
    if (!perOffer && !offer.emergencyExcluded) {
      allowed.keep(i, NO_RESERVATIONS);
      continue;
    }
    const checks = input.counterChecks?.get(offer) ?? counterChecks(offer, config, input.customerId, input.channel?.id ?? null, input.nowMs);
    const blockedBy = blockingVerdict(offer, config, input, checks, consentRefused, input.explain ? output.results : null);
    if (blockedBy) {
      output.rejections.push({
        offerId: offer.id,
        offerName: offer.name,
        stage: blockedBy.stage,
        reason: blockedBy.reason,
        detail: { policyId: blockedBy.policyId, ...blockedBy.detail },
      });
      allowed.drop(i);
    } else {
      allowed.keep(i, reservationsOf(checks));
    }
  }
  output.allowed = allowed.result();
  output.reservations = allowed.column();
  return output;
}

/**
 * Every counter the policies hold against `offer`: frequency caps first, then budgets. The service
 * reads these keys before deciding (see counter-keys.ts), and reserves those that consume.
 */
export function counterChecks(
  offer: Offer,
  config: ContactPolicyConfig,
  customerId: string,
  channelId: string | null,
  nowMs: number,
): readonly CounterCheck[] {
  // Most offers meet no cap or budget (a tenant's suppression policies hold no counter): they
  // share one empty list, and a list is made only for an offer that has a check.
  let checks: CounterCheck[] | null = null;
  for (const policy of config.contactPolicies) {
    if (policy.type === "suppression") continue;
    const check = frequencyCapCheck(policy, offer, customerId, channelId, nowMs);
    if (check) (checks ??= []).push(check);
  }
  for (const budget of config.budgets) {
    const budgeted = budgetChecks(budget, offer, channelId, nowMs);
    if (budgeted.length) (checks ??= []).push(...budgeted);
  }
  return checks ?? NO_CHECKS;
}

/**
 * The first verdict that blocks `offer`, the checks running in stage order and stopping there.
 * With `rows` (an explained decision) every verdict reached leaves a row; a verdict that does not
 * block says why only then, since nothing else reads it.
 */
function blockingVerdict(
  offer: Offer,
  config: ContactPolicyConfig,
  input: ContactPolicyInput,
  checks: readonly CounterCheck[],
  consentRefused: string | null,
  rows: ContactPolicyRow[] | null,
): Verdict | undefined {
  if (offer.emergencyExcluded) {
    return noted(rows, offer, { stage: "contact_policy", policyId: CONTACT_CHECKS.emergency, blocked: true, reason: "offer is emergency-excluded" });
  }
  for (const rule of config.guardrails) {
    const outcome = guardrailVerdict(rule, offer, input.bag, input.nowMs);
    if (!outcome) continue;
    const verdict: Verdict = { stage: "guardrail", policyId: rule.id, blocked: outcome.excluded, reason: outcome.reason };
    if (noted(rows, offer, verdict).blocked) return verdict;
  }
  if (input.channel) {
    const verdict: Verdict =
      consentRefused === null
        ? { stage: "consent", policyId: CONTACT_CHECKS.consent, blocked: false, reason: rows ? `no consent refusal for channel ${input.channel.id}` : "" }
        : {
            stage: "consent",
            policyId: CONTACT_CHECKS.consent,
            blocked: true,
            reason: `customer refused consent for channel ${consentRefused}`,
            detail: { channelId: input.channel.id, consentKey: consentRefused },
          };
    if (noted(rows, offer, verdict).blocked) return verdict;
  }
  for (const policy of config.contactPolicies) {
    if (policy.type !== "suppression" || !appliesToOffer(policy.appliesTo, offer)) continue;
    const outcome = suppressingOutcome(policy, offer, input.recentOutcomes, input.nowMs);
    const verdict: Verdict = outcome
      ? {
          stage: "suppression",
          policyId: policy.id,
          blocked: true,
          reason: `suppressed for ${policy.windowSeconds}s after ${outcome.outcome} at ${outcome.at}`,
          detail: { outcome: outcome.outcome, at: outcome.at },
        }
      : { stage: "suppression", policyId: policy.id, blocked: false, reason: "no suppressing outcome in window" };
    if (noted(rows, offer, verdict).blocked) return verdict;
  }
  for (const check of checks) {
    const admitted = admits(check, input.counters);
    if (admitted && !rows) continue;
    const current = input.counters[check.key] ?? 0;
    const stage = counterStage(check);
    const what = counterLabel(check);
    const verdict: Verdict = admitted
      ? { stage, policyId: check.policyId, blocked: false, reason: `${what} ${current}/${check.limit}` }
      : {
          stage,
          policyId: check.policyId,
          blocked: true,
          reason: `${what} exhausted: ${current}/${check.limit}`,
          detail: { key: check.key, current, limit: check.limit },
        };
    if (noted(rows, offer, verdict).blocked) return verdict;
  }
  if (config.maturityRamp) {
    const ramp = rampVerdict(config.maturityRamp, offer, input.customerId, input.nowMs);
    if (ramp.fraction < 1) {
      const share = `${(ramp.fraction * 100).toFixed(1)}%`;
      const verdict: Verdict = {
        stage: "maturity_ramp",
        policyId: CONTACT_CHECKS.maturityRamp,
        blocked: !ramp.admitted,
        reason: ramp.admitted ? `new offer ramping, customer within first ${share}` : `new offer ramping, shown to ${share} of customers`,
        detail: { fraction: ramp.fraction, position: ramp.position },
      };
      if (noted(rows, offer, verdict).blocked) return verdict;
    }
  }
  return undefined;
}

/** `verdict`, after leaving its row when the decision is explained. */
function noted(rows: ContactPolicyRow[] | null, offer: Offer, verdict: Verdict): Verdict {
  rows?.push({ offerId: offer.id, blocked: verdict.blocked, policyId: verdict.policyId, reason: verdict.reason });
  return verdict;
}


/**
 * Stage 1, qualification (eligibility): may this customer have this offer at all? Checks, in order,
 * the offer's status, its schedule, its own eligibility condition and then every decisioning gate
 * that applies to it. The first failure drops the offer (stage `eligibility`); every check that ran
 * leaves a `qualificationResults` row so a trace shows skipped rules and their warnings too.
 */
import type { AttributeBag } from "./attributes.js";
import type { Offer } from "./catalog.js";
import { evaluateCondition, type Condition, type ConditionOutcome, type OnMissing } from "./conditions.js";
import { appliesToOffer, type OfferScope } from "./offer-scope.js";
import type { Rejection } from "./rejections.js";
import { scheduleViolation } from "./schedule.js";
import { Subsequence } from "./subsequence.js";

/** A decisioning gate (spec 2.20): `onMissing` defaults to `skip`; no `appliesTo` means every offer. */
export interface QualificationRule {
  id: string;
  name?: string;
  condition: Condition;
  onMissing?: OnMissing;
  appliesTo?: OfferScope;
}

/** One check on one offer (spec 2.16 `qualificationResults[]`). */
export interface QualificationRow {
  offerId: string;
  passed: boolean;
  ruleId: string;
  reason: string;
  skipped?: true;
  warning?: string;
  attribute?: string;
}

export interface QualificationOutput {
  qualified: readonly Offer[];
  results: QualificationRow[];
  rejections: Rejection[];
}

/** Row ids of the built-in checks, distinct from configured gate ids. */
export const QUALIFICATION_CHECKS = {
  /** One row for an offer that passed only the built-in checks, none of which had anything to test. */
  offer: "offer",
  status: "offer.status",
  schedule: "offer.schedule",
  eligibility: "offer.eligibility",
} as const;

/** Without Object.keys, which allocated an array for each offer of every decision. */
function isEmpty(value: object | undefined): boolean {
  if (value === undefined) return true;
  for (const key in value) if (Object.hasOwn(value, key)) return false;
  return true;
}

/** `explain` keeps every check's row in `results`; without it only rejections are recorded. */
export function qualify(offers: readonly Offer[], rules: QualificationRule[], bag: AttributeBag, nowMs: number, explain = true): QualificationOutput {
  const output: QualificationOutput = { qualified: offers, results: [], rejections: [] };
  const qualified = new Subsequence(offers);
  // A gate reads the customer and the request, never the offer: one outcome per gate per decision.
  const gateOutcomes = new Map<QualificationRule, ConditionOutcome>();
  for (let i = 0; i < offers.length; i++) {
    const offer = offers[i];
    const gates = rules.length === 0 ? rules : rules.filter((rule) => appliesToOffer(rule.appliesTo, offer));
    if (offer.status === "active" && isEmpty(offer.schedule) && isEmpty(offer.eligibility) && !offer.eligibilityUnread && gates.length === 0) {
      // One row instead of three: a trace of 200 such offers is otherwise mostly rows that say nothing.
      if (explain) output.results.push({ offerId: offer.id, passed: true, ruleId: QUALIFICATION_CHECKS.offer, reason: "active, unscheduled, no eligibility or gates" });
      qualified.keep(i);
      continue;
    }
    const rows = checkOffer(offer, gates, bag, nowMs, gateOutcomes);
    if (explain) output.results.push(...rows);
    const failed = rows.find((r) => !r.passed);
    if (failed) {
      output.rejections.push({
        offerId: offer.id,
        offerName: offer.name,
        stage: "eligibility",
        reason: failed.reason,
        detail: { ruleId: failed.ruleId, ...(failed.attribute ? { attribute: failed.attribute } : {}) },
      });
      qualified.drop(i);
    } else {
      qualified.keep(i);
    }
  }
  output.qualified = qualified.result();
  return output;
}

/** Rows for each check up to and including the first failure; `gates` are those over this offer. */
function checkOffer(
  offer: Offer,
  gates: QualificationRule[],
  bag: AttributeBag,
  nowMs: number,
  gateOutcomes: Map<QualificationRule, ConditionOutcome>,
): QualificationRow[] {
  if (offer.status !== "active") {
    return [{ offerId: offer.id, passed: false, ruleId: QUALIFICATION_CHECKS.status, reason: `offer status is ${offer.status}` }];
  }
  const rows: QualificationRow[] = [{ offerId: offer.id, passed: true, ruleId: QUALIFICATION_CHECKS.status, reason: "offer is active" }];
  const outOfSchedule = scheduleViolation(offer.schedule, nowMs);
  rows.push({
    offerId: offer.id,
    passed: outOfSchedule === null,
    ruleId: QUALIFICATION_CHECKS.schedule,
    reason: outOfSchedule ?? "within schedule",
  });
  if (outOfSchedule !== null) return rows;
  if (offer.eligibilityUnread) {
    rows.push({ offerId: offer.id, passed: false, ruleId: QUALIFICATION_CHECKS.eligibility, reason: `offer eligibility cannot be evaluated: ${offer.eligibilityUnread}` });
    return rows;
  }
  const checks: Array<{ id: string; label: string; condition: Condition; onMissing: OnMissing; gate?: QualificationRule }> = [
    { id: QUALIFICATION_CHECKS.eligibility, label: "offer eligibility", condition: offer.eligibility ?? {}, onMissing: "skip" },
    ...gates.map((rule) => ({ id: rule.id, label: `rule ${rule.name ?? rule.id}`, condition: rule.condition, onMissing: rule.onMissing ?? "skip", gate: rule })),
  ];
  for (const check of checks) {
    let outcome = check.gate && gateOutcomes.get(check.gate);
    if (!outcome) {
      outcome = evaluateCondition(check.condition, bag, check.onMissing, nowMs);
      if (check.gate) gateOutcomes.set(check.gate, outcome);
    }
    const row = { offerId: offer.id, ruleId: check.id, reason: describe(check.label, outcome), ...outcome };
    rows.push(row);
    if (!row.passed) break;
  }
  return rows;
}

function describe(label: string, outcome: ConditionOutcome): string {
  if (outcome.skipped) return `${label} skipped: attribute ${outcome.attribute} is missing`;
  if (outcome.passed) return `${label} passed`;
  if (outcome.attribute) return `${label} blocked: attribute ${outcome.attribute} is missing (onMissing=block)`;
  return `${label} not met`;
}

/**
 * An offer's `eligibility` (spec 2.4: an open object, "eligibility rule config") as the engine reads
 * it. Offer create, update and import check it, and the snapshot compiler reads it, through this one
 * function, so an offer that is stored is an offer that decides: none can be accepted on write and
 * then left out of every decision.
 *
 * Two spellings are read:
 *   {} (or absent)                      no eligibility: everyone qualifies
 *   a condition                         the condition language (conditions.ts)
 *   {"rules": [condition, ...]}         every rule holds (or any, with "logic": "OR");
 *                                       `{"rules": []}` is no rules, as `{}`
 * A malformed condition is a problem naming its path, a 400 on write. Anything else (`{"minAge":
 * 18}`, rules in another language) is the spec's open "rule config": stored as given, and Recommend
 * leaves the offer out rather than guess (`unread`), as it always has.
 */
import { validateCondition, type Condition } from "./conditions.js";

const CONDITION_KEYS = ["all", "any", "not", "attribute"];

export interface OfferEligibility {
  /** What qualification evaluates; undefined when there is none. */
  condition?: Condition;
  /** `<path>: <message>` problems; when any, `condition` is undefined. */
  problems: string[];
  /** Why the engine cannot evaluate an eligibility it accepts on write: the offer decides nothing. */
  unread?: string;
}

export function offerEligibility(value: unknown, path = "eligibility"): OfferEligibility {
  if (value === undefined || value === null) return { problems: [] };
  if (typeof value !== "object" || Array.isArray(value)) return { problems: [`${path}: must be an object`] };
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 0) return { problems: [] };
  if (keys.some((k) => CONDITION_KEYS.includes(k))) {
    const problems = validateCondition(record, path);
    return problems.length ? { problems } : { condition: record as Condition, problems: [] };
  }
  if ("rules" in record) return ruleList(record, path);
  return { problems: [], unread: `${path}: not a condition (one of all, any, not or attribute) nor {"rules": [conditions]}` };
}

/** `{"rules": [...], "logic"?: "AND" | "OR"}`: all of the rules (the default) or any of them. */
function ruleList(record: Record<string, unknown>, path: string): OfferEligibility {
  const { rules, logic, ...others } = record;
  const junction = typeof logic === "string" ? ({ AND: "all", OR: "any" } as const)[logic.toUpperCase()] : logic === undefined ? "all" : undefined;
  const unread = [
    ...Object.keys(others).map((k) => `${path}.${k}: unknown key next to rules`),
    ...(junction ? [] : [`${path}.logic: must be AND or OR`]),
    ...(Array.isArray(rules) ? rules.flatMap((rule, i) => validateCondition(rule, `${path}.rules[${i}]`)) : [`${path}.rules: not an array of conditions`]),
  ];
  if (unread.length) return { problems: [], unread: unread.join("; ") };
  const conditions = rules as Condition[];
  if (conditions.length === 0) return { problems: [] };
  if (conditions.length === 1) return { condition: conditions[0], problems: [] };
  return { condition: junction === "all" ? { all: conditions } : { any: conditions }, problems: [] };
}

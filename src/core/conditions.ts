/**
 * The condition language of eligibility rules, decisioning gates and guardrails
 * (docs/decisioning-core.md, "Condition language").
 *
 * A condition is plain JSON so it can be stored, exported and validated without code:
 *
 *   {}                                   always true (an offer with no eligibility)
 *   {"all": [c, ...]}                    every child holds
 *   {"any": [c, ...]}                    at least one child holds
 *   {"not": c}                           the child does not hold
 *   {"attribute": "customer.age", "op": "gte", "value": 18}
 *
 * Evaluation is three-valued: a leaf over a missing (absent or null) attribute is `unknown`, and
 * unknown propagates the Kleene way (`all` is false as soon as one child is false, `any` is true as
 * soon as one child is true, `not` keeps unknown). Only at the top does the rule's `onMissing`
 * decide what unknown means, so `{"any": [missing, true]}` passes without a warning while
 * `{"all": [missing, true]}` is skipped with one.
 */
import { isMissing, resolveAttribute, type AttributeBag } from "./attributes.js";
import { MS_PER_DAY, parseInstant } from "./time.js";

export const CONDITION_OPS = [
  "eq", "neq", "gt", "gte", "lt", "lte", "in", "not_in", "contains",
  "exists", "not_exists", "between", "before", "after",
] as const;

export type ConditionOp = (typeof CONDITION_OPS)[number];

export interface LeafCondition {
  attribute: string;
  op: ConditionOp;
  value?: unknown;
}

export type Condition =
  | { all: Condition[] }
  | { any: Condition[] }
  | { not: Condition }
  | LeafCondition
  | Record<string, never>;

/**
 * What a rule does when its condition needs an attribute the request lacks: `skip` (the default,
 * spec 2.20) lets the rule pass and records a warning; `block` makes it fail.
 */
export type OnMissing = "skip" | "block";

/** The three-valued result of matching: `value` null means unknown for want of `attribute`. */
export interface ConditionMatch {
  value: boolean | null;
  /** The first missing attribute that made the result unknown. */
  attribute?: string;
}

/** The two-valued outcome once `onMissing` has been applied, in the shape of a trace row. */
export interface ConditionOutcome {
  passed: boolean;
  skipped?: true;
  warning?: string;
  attribute?: string;
}

const MAX_DEPTH = 32;
const SCALAR_TYPES = new Set(["string", "number", "boolean"]);

/** Matches `condition` against the bag; `nowMs` anchors `"now"` and `{daysAgo}` in date operators. */
export function matchCondition(condition: Condition, bag: AttributeBag, nowMs: number): ConditionMatch {
  if ("all" in condition) return combine(condition.all, bag, nowMs, false);
  if ("any" in condition) return combine(condition.any, bag, nowMs, true);
  if ("not" in condition) {
    const inner = matchCondition(condition.not, bag, nowMs);
    return inner.value === null ? inner : { value: !inner.value };
  }
  if ("attribute" in condition) return matchLeaf(condition as LeafCondition, bag, nowMs);
  return { value: true };
}

/** Matches and applies `onMissing`: the outcome a qualification row records. */
export function evaluateCondition(
  condition: Condition,
  bag: AttributeBag,
  onMissing: OnMissing,
  nowMs: number,
): ConditionOutcome {
  const match = matchCondition(condition, bag, nowMs);
  if (match.value !== null) return { passed: match.value };
  if (onMissing === "block") return { passed: false, attribute: match.attribute };
  return {
    passed: true,
    skipped: true,
    warning: `attribute ${match.attribute} is missing; condition skipped (onMissing=skip)`,
    attribute: match.attribute,
  };
}

/** `short` is the value that decides the combination at once: true for any, false for all. */
function combine(children: Condition[], bag: AttributeBag, nowMs: number, short: boolean): ConditionMatch {
  let unknown: ConditionMatch | undefined;
  for (const child of children) {
    const match = matchCondition(child, bag, nowMs);
    if (match.value === short) return { value: short };
    if (match.value === null) unknown ??= match;
  }
  return unknown ?? { value: !short };
}

function matchLeaf(leaf: LeafCondition, bag: AttributeBag, nowMs: number): ConditionMatch {
  const actual = resolveAttribute(bag, leaf.attribute);
  if (leaf.op === "exists") return { value: !isMissing(actual) };
  if (leaf.op === "not_exists") return { value: isMissing(actual) };
  if (isMissing(actual)) return { value: null, attribute: leaf.attribute };
  return { value: applyOp(leaf.op, actual, leaf.value, nowMs) };
}

function applyOp(op: Exclude<ConditionOp, "exists" | "not_exists">, actual: unknown, expected: unknown, nowMs: number): boolean {
  switch (op) {
    case "eq":
      return looseEqual(actual, expected);
    case "neq":
      return !looseEqual(actual, expected);
    case "in":
      return isIn(actual, expected);
    case "not_in":
      return !isIn(actual, expected);
    case "contains":
      if (typeof actual === "string" && typeof expected === "string") return actual.includes(expected);
      return Array.isArray(actual) && actual.some((item) => looseEqual(item, expected));
    case "gt":
      return compareNumbers(actual, expected, (a, b) => a > b);
    case "gte":
      return compareNumbers(actual, expected, (a, b) => a >= b);
    case "lt":
      return compareNumbers(actual, expected, (a, b) => a < b);
    case "lte":
      return compareNumbers(actual, expected, (a, b) => a <= b);
    case "between": {
      if (!Array.isArray(expected) || expected.length !== 2) return false;
      const value = toNumber(actual);
      const [low, high] = expected.map(toNumber);
      return value !== null && low !== null && high !== null && value >= low && value <= high;
    }
    case "before":
    case "after": {
      const at = parseInstant(actual);
      const reference = resolveDateValue(expected, nowMs);
      if (at === null || reference === null) return false;
      return op === "before" ? at < reference : at > reference;
    }
    default:
      // Unvalidated configuration: an operator the language does not have never matches.
      return false;
  }
}

/**
 * Scalars compare strictly, except that a number and a numeric string compare as numbers:
 * customer attributes loaded from files often arrive as text.
 */
function looseEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === "number" || typeof b === "number") {
    const x = toNumber(a);
    const y = toNumber(b);
    return x !== null && y !== null && x === y;
  }
  return false;
}

/** An array attribute is in the list when any of its elements is. */
function isIn(actual: unknown, list: unknown): boolean {
  if (!Array.isArray(list)) return false;
  const values = Array.isArray(actual) ? actual : [actual];
  return values.some((v) => list.some((item) => looseEqual(v, item)));
}

function toNumber(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value === "string" && value.trim() !== "") {
    const n = Number(value);
    return Number.isFinite(n) ? n : null;
  }
  return null;
}

function compareNumbers(a: unknown, b: unknown, test: (x: number, y: number) => boolean): boolean {
  const x = toNumber(a);
  const y = toNumber(b);
  return x !== null && y !== null && test(x, y);
}

/** `"now"`, an ISO instant, `{daysAgo: n}` or `{daysFromNow: n}` (n days relative to now). */
function resolveDateValue(value: unknown, nowMs: number): number | null {
  if (value === "now") return nowMs;
  if (typeof value === "string") return parseInstant(value);
  const offset = relativeDays(value);
  return offset === null ? null : nowMs + offset * MS_PER_DAY;
}

/** Signed day offset of a relative date value, or null when it is not one. */
function relativeDays(value: unknown): number | null {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return null;
  const keys = Object.keys(value);
  if (keys.length !== 1) return null;
  const days = (value as Record<string, unknown>)[keys[0]];
  if (typeof days !== "number" || !Number.isFinite(days) || days < 0) return null;
  if (keys[0] === "daysAgo") return -days;
  if (keys[0] === "daysFromNow") return days;
  return null;
}

/**
 * Every problem with a condition as `<path>: <message>` (spec 7's field messages), empty when it is
 * valid. Services call it on write so a bad rule is a 400, never a silent runtime false.
 */
export function validateCondition(condition: unknown, path = "condition"): string[] {
  return validateAt(condition, path, 0);
}

function validateAt(node: unknown, path: string, depth: number): string[] {
  if (depth > MAX_DEPTH) return [`${path}: nested deeper than ${MAX_DEPTH} levels`];
  if (node === null || typeof node !== "object" || Array.isArray(node)) return [`${path}: must be an object`];
  const keys = Object.keys(node);
  if (keys.length === 0) return [];
  const record = node as Record<string, unknown>;
  const kinds = ["all", "any", "not", "attribute"].filter((k) => k in record);
  if (kinds.length !== 1) return [`${path}: must have exactly one of all, any, not or attribute`];
  const kind = kinds[0];
  if (kind === "attribute") return validateLeaf(record, path);
  const extra = keys.filter((k) => k !== kind);
  if (extra.length > 0) return extra.map((k) => `${path}.${k}: unknown key`);
  if (kind === "not") return validateAt(record.not, `${path}.not`, depth + 1);
  const children = record[kind];
  if (!Array.isArray(children)) return [`${path}.${kind}: must be an array`];
  if (children.length === 0) return [`${path}.${kind}: must not be empty`];
  return children.flatMap((child, i) => validateAt(child, `${path}.${kind}[${i}]`, depth + 1));
}

function validateLeaf(leaf: Record<string, unknown>, path: string): string[] {
  const errors = Object.keys(leaf)
    .filter((k) => k !== "attribute" && k !== "op" && k !== "value")
    .map((k) => `${path}.${k}: unknown key`);
  if (typeof leaf.attribute !== "string" || !/^[^.\s]+(\.[^.\s]+)*$/.test(leaf.attribute)) {
    errors.push(`${path}.attribute: must be a dotted attribute path such as customer.age`);
  }
  if (!CONDITION_OPS.includes(leaf.op as ConditionOp)) {
    errors.push(`${path}.op: must be one of ${CONDITION_OPS.join(", ")}`);
    return errors;
  }
  const problem = valueProblem(leaf.op as ConditionOp, leaf.value, "value" in leaf);
  if (problem) errors.push(`${path}.value: ${problem}`);
  return errors;
}

/** Why `value` does not suit `op`, or undefined when it does. */
function valueProblem(op: ConditionOp, value: unknown, present: boolean): string | undefined {
  switch (op) {
    case "exists":
    case "not_exists":
      return present ? `must be absent for ${op}` : undefined;
    case "eq":
    case "neq":
    case "contains":
      return SCALAR_TYPES.has(typeof value) ? undefined : "must be a string, number or boolean";
    case "in":
    case "not_in":
      return Array.isArray(value) && value.length > 0 && value.every((v) => SCALAR_TYPES.has(typeof v))
        ? undefined
        : "must be a non-empty array of strings, numbers or booleans";
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      return typeof value === "number" && Number.isFinite(value) ? undefined : "must be a number";
    case "between":
      return Array.isArray(value) &&
        value.length === 2 &&
        value.every((v) => typeof v === "number" && Number.isFinite(v)) &&
        value[0] <= value[1]
        ? undefined
        : "must be [low, high] numbers with low <= high";
    case "before":
    case "after":
      return value === "now" || (typeof value === "string" && parseInstant(value) !== null) || relativeDays(value) !== null
        ? undefined
        : 'must be "now", an ISO 8601 instant, {"daysAgo": n} or {"daysFromNow": n} with n >= 0';
  }
}

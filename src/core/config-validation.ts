/**
 * Validators for the `config` objects of decision rules, so the catalog rejects on write (400 with
 * `<path>: <message>` lines) exactly what the core could not read. The rule's id and name live on
 * the catalog entry; `config` holds the rest of each shape (docs/decisioning-core.md, "Configuration the core reads").
 * Unknown keys are errors: a misspelt `onMisssing` would otherwise be silently ignored.
 */
import { validateCondition } from "./conditions.js";
import { parseInstant } from "./time.js";

type Validator = (config: unknown) => string[];
type FieldCheck = (value: unknown, path: string) => string[];

const ROOT = "config";

/** Qualification rules and decisioning gates: {condition, onMissing?, appliesTo?}. */
export const validateQualificationRuleConfig: Validator = (config) =>
  object(config, ROOT, { condition: required(validateCondition), onMissing: optional(oneOf("skip", "block")), appliesTo: optional(offerScope) });

/** Frequency caps {type?: "frequency_cap", scope, scopeId?, maxImpressions, windowSeconds} or suppression. */
export const validateContactPolicyConfig: Validator = (config) => {
  if (isRecord(config) && config.type === "suppression") {
    return object(config, ROOT, {
      type: required(oneOf("suppression")),
      afterOutcomes: required(stringList(1)),
      windowSeconds: required(integer(1)),
      appliesTo: optional(offerScope),
    });
  }
  return object(config, ROOT, {
    type: optional(oneOf("frequency_cap", "suppression")),
    scope: required(oneOf("offer", "category", "channel")),
    scopeId: optional(text),
    maxImpressions: required(integer(0)),
    windowSeconds: required(integer(1)),
  });
};

/** Guardrails: {condition, action: "exclude", appliesTo?, onMissing?}. */
export const validateGuardrailRuleConfig: Validator = (config) =>
  object(config, ROOT, {
    condition: required(validateCondition),
    action: required(oneOf("exclude")),
    appliesTo: optional(offerScope),
    onMissing: optional(oneOf("skip", "block")),
  });

/** Ranking profiles: {weights: {score?, priority?, businessValue?, propensity?, clv?}, isDefault?}. */
export const validateRankingProfileConfig: Validator = (config) =>
  object(config, ROOT, {
    weights: required((value, path) =>
      object(value, path, {
        score: optional(number(0)),
        priority: optional(number(0)),
        businessValue: optional(number(0)),
        propensity: optional(number(0)),
        clv: optional(number()),
      }),
    ),
    isDefault: optional(boolean),
  });

/** {type: "mutual_exclusion", offerIds} or {type: "max_per_category", categoryId, max}. */
export const validateCrossOfferConstraintConfig: Validator = (config) => {
  if (isRecord(config) && config.type === "max_per_category") {
    return object(config, ROOT, { type: required(oneOf("max_per_category")), categoryId: required(text), max: required(integer(0)) });
  }
  return object(config, ROOT, { type: required(oneOf("mutual_exclusion", "max_per_category")), offerIds: required(stringList(2)) });
};

/** Segments: {condition}, in the same language as eligibility. */
export const validateSegmentConfig: Validator = (config) => object(config, ROOT, { condition: required(validateCondition) });

/** Decision flows: {nodes: [...]} of candidates, score and rank nodes (flow.ts). */
export const validateDecisionFlowConfig: Validator = (config) =>
  object(config, ROOT, {
    nodes: required((value, path) =>
      Array.isArray(value) ? value.flatMap((n, i) => flowNode(n, `${path}[${i}]`)) : [`${path}: must be an array`],
    ),
  });

/**
 * An offer's `schedule` (catalog.ts OfferSchedule): ISO instants, UTC weekdays and hours. The spec
 * leaves the object open, so keys the core does not read are kept and ignored.
 */
export const validateOfferSchedule = (schedule: unknown, path = "schedule"): string[] =>
  knownKeys(schedule, path, {
    startAt: optional(instant),
    endAt: optional(instant),
    daysOfWeek: optional((value, p) =>
      Array.isArray(value) && value.every((d) => Number.isInteger(d) && d >= 0 && d <= 6) ? [] : [`${p}: must be an array of weekdays 0-6`],
    ),
    hours: optional((value, p) =>
      object(value, p, { from: required(range(0, 24)), to: required(range(0, 24)) }),
    ),
  });

/** An offer's own `budget` (catalog.ts OfferBudget); other keys are kept and ignored, as for schedules. */
export const validateOfferBudget = (budget: unknown, path = "budget"): string[] =>
  knownKeys(budget, path, {
    maxImpressions: optional(integer(0)),
    maxSpend: optional(number(0)),
    maxConversions: optional(integer(0)),
    costPerImpression: optional(number(0)),
    costPerConversion: optional(number(0)),
    period: optional(oneOf("lifetime", "day", "week", "month")),
  });

/** By the catalog's rule kind. */
export const CONFIG_VALIDATORS = {
  qualificationRule: validateQualificationRuleConfig,
  contactPolicy: validateContactPolicyConfig,
  guardrailRule: validateGuardrailRuleConfig,
  rankingProfile: validateRankingProfileConfig,
  crossOfferConstraint: validateCrossOfferConstraintConfig,
  segment: validateSegmentConfig,
  decisionFlow: validateDecisionFlowConfig,
} as const satisfies Record<string, Validator>;

function flowNode(node: unknown, path: string): string[] {
  const type = isRecord(node) ? node.type : undefined;
  switch (type) {
    case "candidates":
      return object(node, path, { type: required(text), offerIds: optional(stringList(0)), categoryIds: optional(stringList(0)) });
    case "score":
      return object(node, path, { type: required(text), modelKey: required(text), shadowModelKeys: optional(stringList(0)) });
    case "rank":
      return object(node, path, { type: required(text), profileId: optional(text), count: optional(integer(1)) });
    default:
      return [`${path}.type: must be candidates, score or rank`];
  }
}

function offerScope(value: unknown, path: string): string[] {
  return object(value, path, { offerIds: optional(stringList(0)), categoryIds: optional(stringList(0)) });
}

function object(value: unknown, path: string, fields: Record<string, { check: FieldCheck; required: boolean }>): string[] {
  if (!isRecord(value)) return [`${path}: must be an object`];
  const errors = Object.keys(value)
    .filter((k) => !Object.hasOwn(fields, k))
    .map((k) => `${path}.${k}: unknown key`);
  for (const [name, field] of Object.entries(fields)) {
    const present = Object.hasOwn(value, name) && value[name] !== undefined && value[name] !== null;
    if (!present) {
      if (field.required) errors.push(`${path}.${name}: is required`);
      continue;
    }
    errors.push(...field.check(value[name], `${path}.${name}`));
  }
  return errors;
}

/** Like `object`, for open objects: only the keys the core reads are checked. */
function knownKeys(value: unknown, path: string, fields: Record<string, { check: FieldCheck; required: boolean }>): string[] {
  if (!isRecord(value)) return [`${path}: must be an object`];
  return object(Object.fromEntries(Object.entries(value).filter(([k]) => Object.hasOwn(fields, k))), path, fields);
}

function required(check: FieldCheck) {
  return { check, required: true };
}

function optional(check: FieldCheck) {
  return { check, required: false };
}

function oneOf(...values: string[]): FieldCheck {
  return (value, path) => (values.includes(value as string) ? [] : [`${path}: must be ${values.join(" or ")}`]);
}

function text(value: unknown, path: string): string[] {
  return typeof value === "string" && value !== "" ? [] : [`${path}: must be a non-empty string`];
}

function boolean(value: unknown, path: string): string[] {
  return typeof value === "boolean" ? [] : [`${path}: must be a boolean`];
}

function number(min?: number): FieldCheck {
  return (value, path) =>
    typeof value === "number" && Number.isFinite(value) && (min === undefined || value >= min)
      ? []
      : [`${path}: must be a number${min === undefined ? "" : ` >= ${min}`}`];
}

function instant(value: unknown, path: string): string[] {
  return typeof value === "string" && parseInstant(value) !== null ? [] : [`${path}: must be an ISO 8601 timestamp`];
}

function range(min: number, max: number): FieldCheck {
  return (value, path) => (typeof value === "number" && value >= min && value <= max ? [] : [`${path}: must be a number from ${min} to ${max}`]);
}

function integer(min: number): FieldCheck {
  return (value, path) => (Number.isInteger(value) && (value as number) >= min ? [] : [`${path}: must be an integer >= ${min}`]);
}

function stringList(minLength: number): FieldCheck {
  return (value, path) =>
    Array.isArray(value) && value.length >= minLength && value.every((v) => typeof v === "string" && v !== "")
      ? []
      : [`${path}: must be an array of ${minLength > 0 ? `at least ${minLength} ` : ""}non-empty strings`];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

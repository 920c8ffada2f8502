import { getOption } from "@bufbuild/protobuf";
import { OfferService } from "../../gen/decisioning/v1/catalog_pb.js";
import { policy } from "../../gen/decisioning/v1/options_pb.js";
import type { ColumnValues, FieldRule } from "./write-fields.js";
import type { EntryKind } from "./catalog-store.js";
import { CONFIG_VALIDATORS } from "../core/config-validation.js";

export const OFFER_STATUSES = ["draft", "active", "paused", "archived"] as const;

/** Spec 2.4: every writable offer field, its type, range and default (defaults live in the schema). */
export const OFFER_RULES: readonly FieldRule[] = [
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "status", kind: "string", oneOf: OFFER_STATUSES },
  { name: "category_id", kind: "string", nullable: true },
  { name: "sub_category_id", kind: "string", nullable: true },
  { name: "category", kind: "string", max: 255 },
  { name: "group_name", kind: "string", max: 255 },
  { name: "priority", kind: "int", min: 0, max: 100 },
  { name: "business_value", kind: "number", min: 0, max: 100 },
  { name: "mandatory", kind: "bool" },
  { name: "mandatory_reason", kind: "string", nullable: true, max: 2000 },
  { name: "mandatory_expires_at", kind: "timestamp", nullable: true },
  { name: "mandatory_approved_by", kind: "string", nullable: true, max: 255 },
  { name: "emergency_excluded", kind: "bool" },
  { name: "description", kind: "string" },
  { name: "short_desc", kind: "string", max: 1000 },
  { name: "eligibility", kind: "json" },
  { name: "budget", kind: "json" },
  { name: "schedule", kind: "json" },
  { name: "tags", kind: "strings" },
  { name: "product_type", kind: "string", max: 255 },
  { name: "margin", kind: "number", nullable: true },
  { name: "revenue_value", kind: "number", nullable: true },
  { name: "metadata", kind: "json" },
];

/**
 * Spec 4.3: the only fields PUT /offers/{id} accepts; it ignores the rest, mandatory included. The
 * list is PatchOffer's `accepted_fields` (catalog.proto), which the JSON doors apply before decoding;
 * this applies it again for gRPC callers.
 */
export const OFFER_PATCH_RULES = OFFER_RULES.filter((r) => getOption(OfferService.method.patchOffer, policy).acceptedFields.includes(r.name));

export const CREATIVE_RULES: readonly FieldRule[] = [
  { name: "offer_id", kind: "string", required: true },
  { name: "channel_id", kind: "string", nullable: true },
  { name: "placement_id", kind: "string", nullable: true },
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "status", kind: "string", oneOf: ["active", "inactive"] },
  { name: "content", kind: "json" },
  { name: "content_id", kind: "string", nullable: true },
];

/** Outcome categories drive Respond: what counts as positive, negative, or an impression. */
export const OUTCOME_CATEGORIES = ["positive", "negative", "impression", "neutral"] as const;

/** A reference from one catalog entry to another, which must be a live entry of the tenant. */
export interface EntryReference {
  field: string;
  kind: EntryKind;
}

export interface EntryKindSpec {
  kind: EntryKind;
  /** The REST collection segment: /api/v1/<collection>. */
  collection: string;
  /** Audit entity type and the noun in messages. */
  label: string;
  rules: readonly FieldRule[];
  references: readonly EntryReference[];
  /** Column values of new rows that the body may override. */
  defaults?: ColumnValues;
  /** Checks a decision rule's `config` against the shape the core reads; messages name the path. */
  validateConfig?: (config: unknown) => string[];
  /** Keys a written `config` gets when it leaves them out: the core's defaults, stored so reads show them. */
  configDefaults?: Record<string, unknown>;
}

const common: FieldRule[] = [
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "description", kind: "string" },
  { name: "metadata", kind: "json" },
];

/** A decision rule: a named, switchable `config` object the core reads (docs/decisioning.md). */
function decisionRule(
  kind: EntryKind,
  collection: string,
  label: string,
  validateConfig: (config: unknown) => string[],
  configDefaults?: Record<string, unknown>,
): EntryKindSpec {
  return {
    kind,
    collection,
    label,
    rules: [...common, { name: "status", kind: "string", oneOf: RULE_STATUSES }, { name: "config", kind: "json", required: true }],
    references: [],
    defaults: { status: "active" },
    validateConfig,
    ...(configDefaults && { configDefaults }),
  };
}

/** Spec 2.20: a gate's `onMissing` defaults to `skip`; the core's qualification and guardrails read it so. */
const ON_MISSING_DEFAULT = { onMissing: "skip" };

export const RULE_STATUSES = ["active", "inactive"] as const;

export const ENTRY_KINDS: Record<EntryKind, EntryKindSpec> = {
  category: { kind: "category", collection: "categories", label: "category", rules: common, references: [] },
  sub_category: {
    kind: "sub_category",
    collection: "sub-categories",
    label: "sub-category",
    rules: [...common, { name: "category_id", kind: "string", required: true }],
    references: [{ field: "category_id", kind: "category" }],
  },
  channel: {
    kind: "channel",
    collection: "channels",
    label: "channel",
    rules: [...common, { name: "type", kind: "string", max: 64 }],
    references: [],
  },
  placement: {
    kind: "placement",
    collection: "placements",
    label: "placement",
    rules: [...common, { name: "channel_id", kind: "string", nullable: true }],
    references: [{ field: "channel_id", kind: "channel" }],
  },
  outcome_type: {
    kind: "outcome_type",
    collection: "outcome-types",
    label: "outcome type",
    rules: [
      ...common,
      { name: "key", kind: "string", required: true, min: 1, max: 64 },
      { name: "category", kind: "string", required: true, oneOf: OUTCOME_CATEGORIES },
    ],
    references: [],
  },
  qualification_rule: decisionRule("qualification_rule", "qualification-rules", "qualification rule", CONFIG_VALIDATORS.qualificationRule, ON_MISSING_DEFAULT),
  decisioning_gate: decisionRule("decisioning_gate", "decisioning-gates", "decisioning gate", CONFIG_VALIDATORS.qualificationRule, ON_MISSING_DEFAULT),
  contact_policy: decisionRule("contact_policy", "contact-policies", "contact policy", CONFIG_VALIDATORS.contactPolicy),
  guardrail_rule: decisionRule("guardrail_rule", "guardrail-rules", "guardrail rule", CONFIG_VALIDATORS.guardrailRule, ON_MISSING_DEFAULT),
  ranking_profile: decisionRule("ranking_profile", "ranking-profiles", "ranking profile", CONFIG_VALIDATORS.rankingProfile),
  cross_offer_constraint: decisionRule("cross_offer_constraint", "cross-offer-constraints", "cross-offer constraint", CONFIG_VALIDATORS.crossOfferConstraint),
  segment: decisionRule("segment", "segments", "segment", CONFIG_VALIDATORS.segment),
};

export const BUDGET_SCOPES = ["global", "category", "offer", "channel"] as const;
export const BUDGET_PERIODS = ["lifetime", "day", "week", "month"] as const;
const MAX_INT = 2_147_483_647;
const MAX_AMOUNT = 1e12;

/** Spec 2.19: at least one of the limits on create (checked by the budget validation). */
export const BUDGET_RULES: readonly FieldRule[] = [
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "scope", kind: "string", oneOf: BUDGET_SCOPES },
  { name: "scope_id", kind: "string", nullable: true },
  { name: "max_impressions", kind: "int", nullable: true, min: 0, max: MAX_INT },
  { name: "max_spend", kind: "number", nullable: true, min: 0, max: MAX_AMOUNT },
  { name: "max_conversions", kind: "int", nullable: true, min: 0, max: MAX_INT },
  { name: "cost_per_impression", kind: "number", min: 0, max: MAX_AMOUNT },
  { name: "cost_per_conversion", kind: "number", min: 0, max: MAX_AMOUNT },
  { name: "period", kind: "string", oneOf: BUDGET_PERIODS },
  { name: "status", kind: "string", oneOf: ["active", "paused"] },
];

export const MODEL_TYPES = ["adaptive", "formula", "logistic_regression", "gradient_boosted"] as const;

/** registry_status is absent on purpose: it moves only through promote (spec 3.3). */
export const MODEL_RULES: readonly FieldRule[] = [
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "key", kind: "string", required: true, min: 1, max: 128 },
  { name: "type", kind: "string", required: true, oneOf: MODEL_TYPES },
  { name: "family", kind: "string", max: 255 },
  { name: "description", kind: "string" },
  { name: "config", kind: "json" },
];

export const FLOW_STATUSES = ["draft", "active", "paused", "archived"] as const;

export const FLOW_RULES: readonly FieldRule[] = [
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "key", kind: "string", required: true, min: 1, max: 128 },
  { name: "description", kind: "string" },
  { name: "status", kind: "string", oneOf: FLOW_STATUSES },
  { name: "config", kind: "json" },
  { name: "offer_ids", kind: "strings" },
  { name: "auto_assemble", kind: "bool" },
];

/** Every new tenant starts with these, so Respond works out of the box (docs/catalog.md). */
export const DEFAULT_OUTCOME_TYPES: ReadonlyArray<{ key: string; name: string; category: (typeof OUTCOME_CATEGORIES)[number] }> = [
  { key: "impression", name: "Impression", category: "impression" },
  { key: "delivery", name: "Delivery", category: "impression" },
  { key: "click", name: "Click", category: "positive" },
  { key: "conversion", name: "Conversion", category: "positive" },
  { key: "dismiss", name: "Dismiss", category: "negative" },
];

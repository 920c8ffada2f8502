import type { FieldRule } from "./write-fields.js";
import type { EntryKind } from "./catalog-store.js";

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

/** Spec 4.3: the only fields PUT /offers/{id} accepts; it ignores the rest, mandatory included. */
export const OFFER_PATCH_FIELDS = new Set([
  "name", "description", "short_desc", "priority", "status", "category_id", "sub_category_id", "category",
  "group_name", "product_type", "business_value", "margin", "revenue_value", "emergency_excluded",
  "eligibility", "budget", "schedule", "tags", "metadata",
]);
export const OFFER_PATCH_RULES = OFFER_RULES.filter((r) => OFFER_PATCH_FIELDS.has(r.name));

export const CREATIVE_RULES: readonly FieldRule[] = [
  { name: "offer_id", kind: "string", required: true },
  { name: "channel_id", kind: "string", nullable: true },
  { name: "placement_id", kind: "string", nullable: true },
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "status", kind: "string", oneOf: ["active", "inactive"] },
  { name: "content", kind: "json" },
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
}

const common: FieldRule[] = [
  { name: "name", kind: "string", required: true, min: 1, max: 255 },
  { name: "description", kind: "string" },
  { name: "metadata", kind: "json" },
];

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
};

/** Every new tenant starts with these, so Respond works out of the box (docs/catalog.md). */
export const DEFAULT_OUTCOME_TYPES: ReadonlyArray<{ key: string; name: string; category: (typeof OUTCOME_CATEGORIES)[number] }> = [
  { key: "impression", name: "Impression", category: "impression" },
  { key: "delivery", name: "Delivery", category: "impression" },
  { key: "click", name: "Click", category: "positive" },
  { key: "conversion", name: "Conversion", category: "positive" },
  { key: "dismiss", name: "Dismiss", category: "negative" },
];

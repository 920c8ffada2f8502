/**
 * The one registry of what an export file holds (docs/portability.md). A later domain adds its
 * configuration here, in file order: a kind comes after every kind its rows reference, because
 * import inserts kind by kind and checks references against what is already in the tenant.
 * Rows travel as their table's columns, camelCased; import fills the same columns back.
 */
import { ENTRY_KINDS } from "../catalog/catalog-rules.js";
import type { EntryKind } from "../catalog/catalog-store.js";
import { CONFIG_VALIDATORS } from "../core/config-validation.js";
import { isIdentifier, normalizeFields } from "../core/ingestion/data-schema.js";

export interface ExportableKind {
  /** Its name in the file's `entities`: camelCase plural. */
  kind: string;
  table: string;
  /** Audit entity type of an imported row. */
  entityType: string;
  /** Extra row filter (SQL over the table's columns), beside the tenant and, with `softDeleted`, liveness. */
  where?: string;
  /** The table has deleted_at: deleted rows are not exported. */
  softDeleted: boolean;
  /** Null for rows without an id of their own (flow versions, keyed by their flow). */
  idColumn: "id" | null;
  nameColumn: string | null;
  keyColumn: string | null;
  /** Column values every imported row gets: the entity's not-live state, cleared credentials. */
  onImport: Record<string, unknown>;
  /** Columns never exported (secrets) and never imported. */
  omit?: readonly string[];
  /** Columns naming rows of other kinds (uuid or uuid[]), and where those must exist. */
  references?: Record<string, Reference>;
  /** Field messages (`<column>: <problem>`) for a row import is about to insert. */
  validate?: (row: Record<string, unknown>) => string[];
  /** Single-entity exports: the rows that belong to the entity `id`. */
  belongsTo?: string;
}

/** A table, and for catalog entries the entry kind, that a reference column must name a live row of. */
export interface Reference {
  table: string;
  entryKind?: EntryKind;
  /** False for tables without deleted_at, whose every row is live. */
  softDeleted?: boolean;
}

const entry = (entryKind: EntryKind): Reference => ({ table: "catalog_entries", entryKind });
/** Ingestion's tables delete rows outright (no deleted_at). */
const ingestionRef = (table: string): Reference => ({ table, softDeleted: false });

/** Catalog kinds in reference order: sub-categories name categories, placements channels. */
const CATALOG_ORDER: EntryKind[] = [
  "category", "sub_category", "channel", "placement", "outcome_type", "qualification_rule", "decisioning_gate",
  "contact_policy", "guardrail_rule", "ranking_profile", "cross_offer_constraint", "segment",
];

const camelPlural = (kind: string) => {
  const camel = kind.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return camel.endsWith("y") ? `${camel.slice(0, -1)}ies` : `${camel}s`;
};

const catalogKinds: ExportableKind[] = CATALOG_ORDER.map((kind) => {
  const spec = ENTRY_KINDS[kind];
  const isRule = spec.validateConfig !== undefined;
  return {
    kind: camelPlural(kind),
    table: "catalog_entries",
    entityType: kind,
    where: `kind = '${kind}'`,
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: kind === "outcome_type" ? "key" : null,
    // Decision rules are switched off until someone looks at them; the others have no state.
    onImport: { kind, ...(isRule && { status: "inactive" }) },
    references: Object.fromEntries(spec.references.map((r) => [r.field, entry(r.kind)])),
    validate: spec.validateConfig ? (row) => spec.validateConfig!(row.config) : undefined,
  };
});

export const EXPORTABLE_KINDS: readonly ExportableKind[] = [
  ...catalogKinds,
  {
    kind: "offers",
    table: "offers",
    entityType: "offer",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    // A mandatory flag is an admin's approval in the source tenant: it does not travel.
    onImport: { status: "draft", mandatory: false, mandatory_reason: null, mandatory_expires_at: null, mandatory_approved_by: null },
    references: { category_id: entry("category"), sub_category_id: entry("sub_category") },
  },
  {
    kind: "creatives",
    table: "creatives",
    entityType: "creative",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    // Content items do not travel yet (docs/portability.md): the link is dropped, not left dangling.
    onImport: { status: "inactive", content_id: null },
    references: { offer_id: { table: "offers" }, channel_id: entry("channel"), placement_id: entry("placement") },
  },
  {
    kind: "budgets",
    table: "budgets",
    entityType: "budget",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    onImport: { status: "paused" },
  },
  {
    kind: "algorithmModels",
    table: "algorithm_models",
    entityType: "algorithm_model",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: "key",
    onImport: { registry_status: "draft" },
  },
  {
    kind: "decisionFlows",
    table: "decision_flows",
    entityType: "decision_flow",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: "key",
    // A draft is not published; its version history comes along (decisionFlowVersions).
    onImport: { status: "draft", published_version: null },
    references: { offer_ids: { table: "offers" } },
    validate: (row) => CONFIG_VALIDATORS.decisionFlow(row.config),
  },
  {
    kind: "decisionFlowVersions",
    table: "decision_flow_versions",
    entityType: "decision_flow_version",
    softDeleted: false,
    idColumn: null,
    nameColumn: null,
    keyColumn: null,
    // Who published in the source tenant names a user of that tenant.
    onImport: { published_by: null },
    references: { flow_id: { table: "decision_flows" } },
    belongsTo: "flow_id",
  },
  {
    kind: "experiments",
    table: "experiments",
    entityType: "experiment",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: "key",
    onImport: { status: "draft", started_at: null, promoted_model_id: null, promoted_at: null },
    references: { flow_id: { table: "decision_flows" }, champion_model_id: { table: "algorithm_models" } },
  },
  {
    kind: "notificationProviders",
    table: "notification_providers",
    entityType: "notification_provider",
    softDeleted: false,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    // Credentials never leave the tenant: the imported provider needs its secrets set again.
    omit: ["secrets", "secrets_key_id"],
    onImport: { secret_fields: [] },
  },
  {
    kind: "connectors",
    table: "ingestion_connectors",
    entityType: "connector",
    softDeleted: false,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    // Spec 2.21: authConfig's credentials are excluded from exports and cleared on import; the imported
    // connector is in error until its authConfig is entered again (docs/ingestion.md).
    omit: ["secrets", "secrets_key_id", "auth_config", "status", "last_error", "last_tested_at"],
    onImport: { status: "error", last_error: "imported without credentials: PUT the connector with its authConfig" },
  },
  {
    // The row's table is created by the ingestion domain's import hook (portability.ts, afterImport).
    kind: "schemas",
    table: "ingestion_schemas",
    entityType: "schema",
    softDeleted: false,
    idColumn: "id",
    // The name makes the table's name: it is kept (a clash is 409), not suffixed with "(imported)".
    nameColumn: null,
    keyColumn: null,
    onImport: {},
    validate: (row) => {
      // A file's names reach DDL: they pass the same checks as POST /api/v1/schemas.
      const problems: string[] = [];
      if (!isIdentifier(row.name)) problems.push("name: must be 1 to 40 letters, digits or underscores, starting with a letter");
      else if (row.table_name !== `ds_${row.name.toLowerCase()}`) problems.push(`tableName: must be ds_${row.name.toLowerCase()}`);
      if (!Array.isArray(row.fields)) problems.push("fields: must be an array");
      else {
        const violations: Array<{ field: string; message: string }> = [];
        normalizeFields(row.fields as Array<Record<string, unknown>>, violations);
        problems.push(...violations.map((v) => `${v.field}: ${v.message}`));
      }
      return problems;
    },
  },
  {
    kind: "pipelines",
    table: "ingestion_pipelines",
    entityType: "pipeline",
    softDeleted: false,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    // High-water marks describe the source tenant's loads.
    onImport: { status: "draft", watermarks: {} },
    references: { connector_id: ingestionRef("ingestion_connectors"), schema_id: ingestionRef("ingestion_schemas") },
  },
  {
    kind: "pipelineIrVersions",
    table: "ingestion_pipeline_ir",
    entityType: "pipeline_ir_version",
    softDeleted: false,
    idColumn: null,
    nameColumn: null,
    keyColumn: null,
    onImport: { created_by: null },
    references: { pipeline_id: ingestionRef("ingestion_pipelines") },
    belongsTo: "pipeline_id",
  },
  {
    kind: "pipelineTargets",
    table: "ingestion_pipeline_targets",
    entityType: "pipeline_target",
    softDeleted: false,
    idColumn: null,
    nameColumn: null,
    keyColumn: null,
    onImport: {},
    references: { pipeline_id: ingestionRef("ingestion_pipelines"), schema_id: ingestionRef("ingestion_schemas") },
    belongsTo: "pipeline_id",
  },
  // Rule actions and alert channels name journeys and providers inside JSON: import rewires them
  // like every other string that was an imported id.
  {
    kind: "journeys",
    table: "journeys",
    entityType: "journey",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    onImport: { status: "inactive" },
  },
  {
    kind: "triggerRules",
    table: "trigger_rules",
    entityType: "trigger",
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    onImport: { status: "inactive" },
  },
  {
    kind: "alertRules",
    table: "alert_rules",
    entityType: "alert_rule",
    softDeleted: false,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    // Evaluation state belongs to the source tenant's data.
    onImport: { enabled: false, status: "ok", last_fired_at: null, last_evaluated_at: null },
  },
];

/** Columns no file carries: the tenant and bookkeeping. */
const UNPORTABLE_COLUMNS = new Set(["tenant_id", "created_at", "updated_at", "deleted_at"]);

/**
 * Whether `column` of `kind` travels in a file. An entity's edit counter does not (an import starts
 * at version 1); a flow version's number does, being part of what it is.
 */
export function isPortable(kind: ExportableKind, column: string): boolean {
  if (UNPORTABLE_COLUMNS.has(column) || kind.omit?.includes(column)) return false;
  return !(column === "version" && kind.idColumn !== null);
}

export const kindByName = new Map(EXPORTABLE_KINDS.map((k) => [k.kind, k]));

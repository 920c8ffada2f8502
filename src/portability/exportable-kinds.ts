/**
 * The one registry of what an export file holds (docs/portability.md). A later domain adds its
 * configuration here, in file order: a kind comes after every kind its rows reference, because
 * import inserts kind by kind and checks references against what is already in the tenant.
 * Rows travel as their table's columns, camelCased; import fills the same columns back.
 */
import { BUDGET_RULES, CREATIVE_RULES, ENTRY_KINDS, FLOW_RULES, MODEL_RULES, OFFER_RULES } from "../catalog/catalog-rules.js";
import type { EntryKind } from "../catalog/catalog-store.js";
import { configViolations } from "../catalog/catalog-support.js";
import { budgetShapeViolations, modelViolations } from "../catalog/decision-config.js";
import { offerShapeProblems } from "../catalog/offer-service.js";
import type { FieldRule } from "../catalog/write-fields.js";
import { parseChannels } from "../alerts/alert-channels.js";
import { CONTENT_ITEM_RULES } from "../content/content-service.js";
import { CONFIG_VALIDATORS } from "../core/config-validation.js";
import { DEFAULT_MODEL } from "../core/scoring/models.js";
import { recordViolations, type ExperimentFields } from "../experiments/experiment-rules.js";
import { invalidFields, isAppError, type FieldViolation } from "../platform/errors.js";
import type { DescMessage, JsonObject, MessageShape } from "@bufbuild/protobuf";
import { JourneyWriteSchema, TriggerWriteSchema } from "../../gen/decisioning/v1/events_pb.js";
import { journeyFlowViolations, journeyValues } from "../events/journey-service.js";
import { triggerValues } from "../events/trigger-service.js";
import { readJson } from "../transport/message-codec.js";
import { isIdentifier, normalizeFields, type SchemaField } from "../core/ingestion/data-schema.js";
import { validatePipelineIr } from "../core/ingestion/pipeline-ir.js";
import { importedIdentifier } from "../core/import-rewiring.js";

/** A schema name's longest (core/ingestion/data-schema.ts, IDENTIFIER): `ds_` and suffixes still fit 63 bytes. */
const SCHEMA_NAME_MAX = 40;

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
  /** How an imported key is made when not `<key>-imported-<suffix>`: keys under narrower rules. */
  importedKey?: (key: string, suffix: string) => string;
  /**
   * Columns computed from the key, set again once it is renamed (a schema's table name); a problem
   * when the file's value is not the one computed from the file's key.
   */
  rekey?: (row: Record<string, unknown>, sourceKey: string) => FieldViolation[];
  /**
   * Keys and names of other kinds that the row names outside `...Key` properties, where `rewire` does
   * not look (a pipeline IR's target `schema` and source `connector`, a decide node's or a journey
   * step's flow): `renamed` gives their imported values when the row they name is in the file.
   */
  rewireKeys?: (row: Record<string, unknown>, renamed: Renamed) => void;
  /** Columns never exported (secrets) and never imported. */
  omit?: readonly string[];
  /** Columns naming rows of other kinds (uuid or uuid[]), and where those must exist. */
  references?: Record<string, Reference>;
  /** The direct write routes' field rules (write-fields.ts), checked on the row's columns. */
  rules?: readonly FieldRule[];
  /**
   * The direct write routes' rules across fields and against the core's shapes; fields named as in the
   * file. `tenant` reads the tenant as the import sees it, rows imported before this one included, for
   * the routes' checks of references held by name or key.
   */
  validate?: (row: Record<string, unknown>, tenant: ImportTenant) => FieldViolation[] | Promise<FieldViolation[]>;
  /** References held inside JSON configs or chosen by another column, each to be found like a reference column. */
  innerReferences?: (row: Record<string, unknown>) => InnerReference[];
  /** Single-entity exports: the rows that belong to the entity `id`. */
  belongsTo?: string;
  /** The edit counter travels: the entity's numbered version rows come along and continue it. */
  keepsVersion?: boolean;
}

/** The imported values of keys and names this import renamed, by the kind of the row that had them. */
export interface Renamed {
  key(kind: string, key: string): string | undefined;
  name(kind: string, name: string): string | undefined;
}

/** The importing tenant's live rows of a kind, read inside the import's transaction (so imported rows are seen). */
export interface ImportTenant {
  rows(kind: string, entityId?: string): Promise<Array<Record<string, unknown>>>;
}

/** A flow named as Recommend's `flow` names one, by id or key, among the tenant's live flows. */
async function flowExistsIn(tenant: ImportTenant): Promise<(idOrKey: string) => Promise<boolean>> {
  const flows = await tenant.rows("decisionFlows");
  return async (idOrKey) => flows.some((f) => f.id === idOrKey || f.key === idOrKey);
}

/** A table, and for catalog entries the entry kind, that a reference column must name a live row of. */
export interface Reference {
  table: string;
  entryKind?: EntryKind;
  /** What "live" means in that table (SQL over its columns); `deleted_at IS NULL` by default. */
  live?: string;
  /** The column the value names: `id` (a UUID) by default, or `key`. */
  column?: "id" | "key";
}

const entry = (entryKind: EntryKind): Reference => ({ table: "catalog_entries", entryKind });
/** Ingestion's tables delete rows outright (no deleted_at): every row is live. */
const ingestionRef = (table: string): Reference => ({ table, live: "true" });

/** One id or key a row names outside its reference columns, and where it sits in the row. */
export interface InnerReference {
  field: string;
  ref: Reference;
  value: unknown;
}

const nodesOf = (config: unknown): Array<Record<string, unknown>> => {
  const nodes = (config as { nodes?: unknown } | null)?.nodes;
  return Array.isArray(nodes) ? nodes.filter((n): n is Record<string, unknown> => typeof n === "object" && n !== null) : [];
};

/** A flow's score and rank nodes: model keys (the built-in default needs no row) and ranking profiles. */
function flowReferences(row: Record<string, unknown>): InnerReference[] {
  const refs: InnerReference[] = [];
  nodesOf(row.config).forEach((node, i) => {
    const keys = [node.modelKey, ...(Array.isArray(node.shadowModelKeys) ? node.shadowModelKeys : [])];
    for (const key of keys) {
      if (key !== undefined && key !== DEFAULT_MODEL.key) refs.push({ field: `config.nodes[${i}].modelKey`, ref: { table: "algorithm_models", column: "key" }, value: key });
    }
    if (node.profileId !== undefined) refs.push({ field: `config.nodes[${i}].profileId`, ref: entry("ranking_profile"), value: node.profileId });
  });
  return refs;
}

/**
 * A row through its write route's own validation, for kinds whose routes check a request message
 * rather than columns: decoded as that message (as REST decodes a body), then checked; the route's
 * field violations, or none.
 */
async function asWrite<S extends DescMessage>(schema: S, json: JsonObject, check: (message: MessageShape<S>) => unknown): Promise<FieldViolation[]> {
  try {
    await check(readJson(schema, json));
    return [];
  } catch (err) {
    if (isAppError(err) && err.reason === "VALIDATION_FAILED") return (err.details.fields as FieldViolation[] | undefined) ?? [{ field: "row", message: err.message }];
    throw err;
  }
}

/** The import checks references itself, inside its transaction (portability-service.ts). */
const REFERENCES_CHECKED_BY_IMPORT = { journeyExists: async () => true, providerExists: async () => true };

const BUDGET_SCOPE_TABLES: Record<string, Reference> = { offer: { table: "offers" }, category: entry("category"), channel: entry("channel") };
const notificationProvider: Reference = { table: "notification_providers", live: "true" };

/**
 * SQL over `table`'s row: `column` names a live row of `ref`'s table in the same tenant. Rows that
 * belong to a deleted one (a creative of an offer deleted on the single-offer path, which does not
 * cascade; a budget on a deleted offer) are left out of exports: they act on nothing, and an import
 * holds every reference to a live row, so with them an export would not import back.
 */
function namesLive(table: string, column: string, ref: Reference): string {
  const kind = ref.entryKind ? ` AND r.kind = '${ref.entryKind}'` : "";
  return `EXISTS (SELECT 1 FROM ${ref.table} r WHERE r.tenant_id = ${table}.tenant_id AND r.id = ${table}.${column} AND ${ref.live ?? "r.deleted_at IS NULL"}${kind})`;
}

/** A content item a creative or another item may name: any but an archived one (docs/content.md). */
const contentItem: Reference = { table: "content_items", live: "status <> 'archived'" };


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
    rules: spec.rules,
    validate: spec.validateConfig ? (row) => configViolations(spec.validateConfig!(row.config)) : undefined,
  };
});

export const EXPORTABLE_KINDS: readonly ExportableKind[] = [
  ...catalogKinds,
  // Content before creatives, which name it. Every item travels, archived ones too (a creative may
  // still name one), and arrives in draft: nothing imported is served before its own review here.
  {
    kind: "contentItems",
    table: "content_items",
    entityType: "content_item",
    softDeleted: false,
    idColumn: "id",
    nameColumn: null,
    keyColumn: null,
    keepsVersion: true,
    onImport: {
      status: "draft", submitted_by: null, approved_by: null, approved_version: null, published_version: null,
      published_at: null, rejection_reason: null, created_by: null,
    },
    references: { parent_template_id: contentItem, source_id: contentItem },
    rules: CONTENT_ITEM_RULES,
  },
  {
    kind: "contentVersions",
    table: "content_versions",
    entityType: "content_version",
    softDeleted: false,
    idColumn: null,
    nameColumn: null,
    keyColumn: null,
    onImport: { published_at: null, created_by: null },
    references: { content_id: contentItem },
    rules: [...CONTENT_ITEM_RULES, { name: "version", kind: "int", required: true, min: 1 }],
    belongsTo: "content_id",
  },
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
    rules: OFFER_RULES,
    validate: (row) => configViolations(offerShapeProblems(row)),
  },
  {
    kind: "creatives",
    table: "creatives",
    entityType: "creative",
    where: namesLive("creatives", "offer_id", { table: "offers" }),
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    onImport: { status: "inactive" },
    references: { offer_id: { table: "offers" }, channel_id: entry("channel"), placement_id: entry("placement"), content_id: contentItem },
    rules: CREATIVE_RULES,
  },
  {
    kind: "budgets",
    table: "budgets",
    entityType: "budget",
    where: `(scope_id IS NULL OR CASE scope ${Object.entries(BUDGET_SCOPE_TABLES)
      .map(([scope, ref]) => `WHEN '${scope}' THEN ${namesLive("budgets", "scope_id", ref)}`)
      .join(" ")} ELSE true END)`,
    softDeleted: true,
    idColumn: "id",
    nameColumn: "name",
    keyColumn: null,
    onImport: { status: "paused" },
    rules: BUDGET_RULES,
    validate: budgetShapeViolations,
    innerReferences: (row) => {
      const ref = BUDGET_SCOPE_TABLES[row.scope as string];
      return ref && row.scope_id ? [{ field: "scopeId", ref, value: row.scope_id }] : [];
    },
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
    rules: MODEL_RULES,
    validate: modelViolations,
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
    rules: FLOW_RULES,
    validate: (row) => configViolations(CONFIG_VALIDATORS.decisionFlow(row.config)),
    innerReferences: flowReferences,
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
    validate: (row) => configViolations(CONFIG_VALIDATORS.decisionFlow(row.config)),
    innerReferences: flowReferences,
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
    validate: (row) => {
      const challengers = row.challengers;
      if (!Array.isArray(challengers) || challengers.some((c) => typeof c !== "object" || c === null || Array.isArray(c))) {
        return [{ field: "challengers", message: "must be a list of {modelId, key, trafficPct}" }];
      }
      return recordViolations(row as Partial<ExperimentFields>, true);
    },
    innerReferences: (row) =>
      (row.challengers as Array<{ modelId?: unknown }>).map((c, i) => ({ field: `challengers[${i}].modelId`, ref: { table: "algorithm_models" }, value: c.modelId })),
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
    // A schema's `name` is its key: unique, named by pipeline IRs, and made into its table's name
    // (`ds_<name>`), so it is renamed like a key, within identifier rules; its display name gets
    // " (imported)" like other names. An export therefore imports back into its own tenant.
    kind: "schemas",
    table: "ingestion_schemas",
    entityType: "schema",
    softDeleted: false,
    idColumn: "id",
    nameColumn: "display_name",
    keyColumn: "name",
    importedKey: (name, suffix) => importedIdentifier(name, suffix, SCHEMA_NAME_MAX),
    rekey: (row, sourceName) => {
      const sourceTable = `ds_${sourceName.toLowerCase()}`;
      if (row.table_name !== sourceTable) return [{ field: "tableName", message: `must be ${sourceTable}` }];
      row.table_name = `ds_${String(row.name).toLowerCase()}`;
      return [];
    },
    onImport: {},
    validate: (row) => {
      // A file's names reach DDL: they pass the same checks as POST /api/v1/schemas.
      const problems: FieldViolation[] = [];
      if (!isIdentifier(row.name)) problems.push({ field: "name", message: "must be 1 to 40 letters, digits or underscores, starting with a letter" });
      if (!Array.isArray(row.fields)) problems.push({ field: "fields", message: "must be an array" });
      else normalizeFields(row.fields as Array<Record<string, unknown>>, problems);
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
    // A target names its schema, a source its connector and a decide node its flow by id (rewired like
    // every id) or by key or name: a schema's name, a connector's name, a flow's key, renamed on import.
    rewireKeys: (row, renamed) => {
      for (const node of nodesOf(row.ir)) {
        if (node.kind === "target" && typeof node.schema === "string") node.schema = renamed.key("schemas", node.schema) ?? node.schema;
        if (node.kind === "source" && typeof node.connector === "string") node.connector = renamed.name("connectors", node.connector) ?? node.connector;
        if (node.kind === "decide" && typeof node.flowId === "string") node.flowId = renamed.key("decisionFlows", node.flowId) ?? node.flowId;
      }
    },
    // POST /pipelines/{id}/ir's own validation, against the tenant as the import sees it: the pipeline's
    // default connector, the schemas, connectors and flows its nodes name (imported or already there).
    validate: async (row, tenant) => {
      const [pipeline] = typeof row.pipeline_id === "string" ? await tenant.rows("pipelines", row.pipeline_id) : [];
      const [schemas, connectors, flows] = await Promise.all([tenant.rows("schemas"), tenant.rows("connectors"), tenant.rows("decisionFlows")]);
      const result = validatePipelineIr(row.ir, {
        schemas: schemas.map((s) => ({ id: s.id as string, name: s.name as string, fields: s.fields as SchemaField[] })),
        connectors: connectors.map((c) => ({ id: c.id as string, name: c.name as string })),
        flows: flows.map((f) => ({ id: f.id as string, key: f.key as string })),
        defaultConnectorId: (pipeline?.connector_id as string | null | undefined) ?? null,
      });
      return result.violations;
    },
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
    // A step names its flow by id (rewired like every id) or by key (renamed on import).
    rewireKeys: (row, renamed) => {
      if (!Array.isArray(row.steps)) return;
      for (const step of row.steps) {
        if (typeof step === "object" && step !== null && typeof step.flow === "string") step.flow = renamed.key("decisionFlows", step.flow) ?? step.flow;
      }
    },
    // The route's checks: journeyValues, then each step's flow a live flow of the tenant.
    validate: async (row, tenant) => {
      const flowExists = await flowExistsIn(tenant);
      return asWrite(
        JourneyWriteSchema,
        { name: row.name, steps: row.steps, status: row.status, exitEventTypes: row.exit_event_types, durationHours: row.duration_hours } as JsonObject,
        async (message) => {
          const violations = await journeyFlowViolations(journeyValues(message).steps, flowExists);
          if (violations.length) throw invalidFields(violations);
        },
      );
    },
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
    validate: (row) =>
      asWrite(
        TriggerWriteSchema,
        { name: row.name, eventType: row.event_type, conditions: row.conditions, action: row.action, status: row.status } as JsonObject,
        (message) => triggerValues("", message, REFERENCES_CHECKED_BY_IMPORT),
      ),
    innerReferences: (row) => {
      const action = (row.action ?? {}) as { journeyId?: unknown; providerId?: unknown };
      return [
        ...(action.journeyId !== undefined ? [{ field: "action.journeyId", ref: { table: "journeys" }, value: action.journeyId }] : []),
        ...(action.providerId !== undefined ? [{ field: "action.providerId", ref: notificationProvider, value: action.providerId }] : []),
      ];
    },
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
    validate: (row) => (Array.isArray(row.channels) ? parseChannels(row.channels as never).violations : [{ field: "channels", message: "must be a list" }]),
    innerReferences: (row) =>
      parseChannels(row.channels as never).destinations.flatMap((d, i) => ("providerId" in d ? [{ field: `channels[${i}]`, ref: notificationProvider, value: d.providerId }] : [])),
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
  return !(column === "version" && kind.idColumn !== null && !kind.keepsVersion);
}

export const kindByName = new Map(EXPORTABLE_KINDS.map((k) => [k.kind, k]));

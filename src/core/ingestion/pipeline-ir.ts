import { isIdentifier, type SchemaField } from "./data-schema.js";
import { ExpressionError, parseExpression, type Expr } from "./expression.js";

/**
 * Pipeline IR 1.0 (spec 2.21, docs/ingestion.md): validation and the typed shape the runner uses.
 * Every problem is reported as `nodes[<i>](<id>).<field>: <message>`, so that an editor can point at it.
 */

export const NODE_KINDS = ["source", "transform", "validate", "target", "decide"] as const;
export type NodeKind = (typeof NODE_KINDS)[number];
export const LOAD_MODES = ["upsert", "truncate", "blue_green", "incremental_watermark", "cdc_mirror"] as const;
export type LoadMode = (typeof LOAD_MODES)[number];
export const ORDERINGS = ["latest_by_mtime", "oldest_by_mtime", "all_by_mtime", "all_by_name"] as const;
export type Ordering = (typeof ORDERINGS)[number];
export const FORMATS = ["csv", "jsonl"] as const;
export type Format = (typeof FORMATS)[number];
export const HASH_ALGORITHMS = ["sha256", "md5"] as const;

export interface SourceNode {
  id: string;
  kind: "source";
  connector: string | null;
  path: string;
  format: Format;
  /** gzip when the key ends in .gz, or when said. */
  compression: "auto" | "gzip" | "none";
  delimiter: string;
  pattern: { type: "glob" | "regex"; value: string } | null;
  ordering: Ordering;
  atomicity: { stagingFolder: string; successFolder: string; failureFolder: string } | null;
  waitPolicy: { maxRetries: number; intervalMinutes: number; onMissAction: "fail" | "skip" | "warn" } | null;
  integrity: { algorithm: "sha256" | "md5"; sidecar: boolean; manifest: string | null; onMismatch: "fail" | "skip" | "warn" } | null;
}
export type TransformOp = { type: "expression"; outputField: string; formula: string; expr: Expr } | { type: "rename"; from: string; to: string };
export interface TransformNode {
  id: string;
  kind: "transform";
  input: string;
  ops: TransformOp[];
}
export interface RowRule {
  type: "regex" | "notNull";
  field: string;
  pattern: RegExp | null;
  onFail: "warn" | "abort";
}
export interface ValidateNode {
  id: string;
  kind: "validate";
  input: string;
  rowLevel: RowRule[];
  rowCount: { min: number | null; max: number | null; onFail: "warn" | "abort" } | null;
  quarantine: { enabled: boolean; table: string } | null;
}
export interface TargetNode {
  id: string;
  kind: "target";
  input: string;
  /** The schema's id (resolved from an id or a name). */
  schemaId: string;
  loadMode: LoadMode;
  upsertKey: string[];
  watermarkColumn: string | null;
  /** cdc_mirror: the input column that holds insert, update or delete. */
  operationColumn: string;
  failOnEmptySource: boolean;
}
export interface DecideNode {
  id: string;
  kind: "decide";
  input: string;
  flowId: string;
  limit: number;
}
export type IrNode = SourceNode | TransformNode | ValidateNode | TargetNode | DecideNode;

export interface PipelineIr {
  id: string;
  version: string;
  errorHandling: { maxAttempts: number; backoff: "none" | "fixed" | "exponential"; initialDelayMs: number; dlq: boolean };
  nodes: IrNode[];
  /** Nodes in an order where every node comes after its input. */
  order: string[];
}

/** What validation needs to know about the tenant: its schemas and connectors by id and name, its decision flows by id and key. */
export interface IrContext {
  schemas: ReadonlyArray<{ id: string; name: string; fields: readonly SchemaField[] }>;
  connectors: ReadonlyArray<{ id: string; name: string }>;
  /** The live decision flows a decide node may name (spec 7: a reference that names nothing of the tenant's is a 400). */
  flows: ReadonlyArray<{ id: string; key: string }>;
  /** The pipeline's own connector, which a source without `connector` uses. */
  defaultConnectorId: string | null;
}

export interface IrViolation {
  field: string;
  message: string;
}

const MAX_NODES = 50;
const ID = /^[A-Za-z0-9_.-]{1,64}$/;
const MAX_REGEX = 500;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Validates an IR against the tenant's schemas and connectors. Returns the typed IR or every
 * violation found (node and field named), never both.
 */
export function validatePipelineIr(raw: unknown, ctx: IrContext): { ir: PipelineIr; violations: [] } | { ir: null; violations: IrViolation[] } {
  const v: IrViolation[] = [];
  const bad = (field: string, message: string) => v.push({ field, message });
  if (!isObj(raw)) return { ir: null, violations: [{ field: "ir", message: "must be an object" }] };
  if (raw.kind !== undefined && raw.kind !== "pipeline") bad("ir.kind", 'must be "pipeline"');
  const version = raw.version === undefined ? "1.0" : String(raw.version);
  if (version !== "1.0" && version !== "1") bad("ir.version", 'must be "1.0"');
  const errorHandling = parseErrorHandling(raw.errorHandling, bad);
  const rawNodes = raw.nodes;
  if (!Array.isArray(rawNodes) || rawNodes.length === 0) {
    bad("ir.nodes", "must be a non-empty array");
    return { ir: null, violations: v };
  }
  if (rawNodes.length > MAX_NODES) bad("ir.nodes", `at most ${MAX_NODES} nodes`);
  const nodes: IrNode[] = [];
  const ids = new Map<string, number>();
  rawNodes.forEach((n, i) => {
    const at = (field: string) => `ir.nodes[${i}]${isObj(n) && typeof n.id === "string" ? `(${n.id})` : ""}.${field}`;
    if (!isObj(n)) return bad(`ir.nodes[${i}]`, "must be an object");
    if (typeof n.id !== "string" || !ID.test(n.id)) return bad(at("id"), "must be 1 to 64 letters, digits, _ . -");
    if (ids.has(n.id)) return bad(at("id"), `"${n.id}" is used by another node`);
    ids.set(n.id, i);
    if (!(NODE_KINDS as readonly unknown[]).includes(n.kind)) return bad(at("kind"), `must be one of ${NODE_KINDS.join(", ")}`);
    const node = parseNode(n as Obj & { id: string; kind: NodeKind }, at, ctx, bad);
    if (node) nodes.push(node);
  });
  const sources = nodes.filter((n) => n.kind === "source");
  if (sources.length !== 1) bad("ir.nodes", `must hold exactly one source node, found ${sources.length}`);
  if (!nodes.some((n) => n.kind === "target")) bad("ir.nodes", "must hold at least one target node");
  const byId = new Map(nodes.map((n) => [n.id, n]));
  for (const n of nodes) {
    if (n.kind === "source") continue;
    const i = ids.get(n.id)!;
    const input = byId.get(n.input);
    if (!input && !ids.has(n.input)) bad(`ir.nodes[${i}](${n.id}).input`, `names no node: "${n.input}"`);
    else if (input?.kind === "target") bad(`ir.nodes[${i}](${n.id}).input`, `"${n.input}" is a target, which has no output`);
  }
  const order = topologicalOrder(nodes);
  if (!order) bad("ir.nodes", "the input references form a cycle");
  if (v.length) return { ir: null, violations: v };
  return { ir: { id: typeof raw.id === "string" ? raw.id : "", version: "1.0", errorHandling, nodes, order: order! }, violations: [] };
}

/**
 * A stored IR's errorHandling, defaults filled in, without the schemas and connectors its nodes
 * need: what a run of it that nobody saw end would have done on failure (its dead letter).
 */
export function errorHandlingOf(raw: unknown): PipelineIr["errorHandling"] {
  return parseErrorHandling(isObj(raw) ? raw.errorHandling : undefined, () => undefined);
}

function parseErrorHandling(raw: unknown, bad: (f: string, m: string) => void): PipelineIr["errorHandling"] {
  const out: PipelineIr["errorHandling"] = { maxAttempts: 1, backoff: "none", initialDelayMs: 1000, dlq: false };
  if (raw === undefined || raw === null) return out;
  if (!isObj(raw)) {
    bad("ir.errorHandling", "must be an object");
    return out;
  }
  if (raw.dlq !== undefined) {
    if (!isObj(raw.dlq) || (raw.dlq.enabled !== undefined && typeof raw.dlq.enabled !== "boolean")) bad("ir.errorHandling.dlq.enabled", "must be a boolean");
    else out.dlq = raw.dlq.enabled === true;
  }
  if (raw.retry !== undefined) {
    if (!isObj(raw.retry)) bad("ir.errorHandling.retry", "must be an object");
    else {
      const { maxAttempts, backoff, initialDelayMs } = raw.retry;
      if (maxAttempts !== undefined) {
        if (!Number.isInteger(maxAttempts) || (maxAttempts as number) < 1 || (maxAttempts as number) > 10) bad("ir.errorHandling.retry.maxAttempts", "must be an integer 1 to 10");
        else out.maxAttempts = maxAttempts as number;
      }
      if (backoff !== undefined) {
        if (backoff !== "none" && backoff !== "fixed" && backoff !== "exponential") bad("ir.errorHandling.retry.backoff", "must be none, fixed or exponential");
        else out.backoff = backoff;
        if (out.backoff === "none") out.backoff = "none";
      } else if (out.maxAttempts > 1) out.backoff = "exponential";
      if (initialDelayMs !== undefined) {
        if (!Number.isInteger(initialDelayMs) || (initialDelayMs as number) < 0 || (initialDelayMs as number) > 600_000) bad("ir.errorHandling.retry.initialDelayMs", "must be an integer 0 to 600000");
        else out.initialDelayMs = initialDelayMs as number;
      }
    }
  }
  return out;
}

/** A glob over object keys: `*` and `?` within one path segment, `**` across segments. */
export function globToRegExp(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "*" && glob[i + 1] === "*") {
      re += ".*";
      i++;
    } else if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

function str(n: Obj, key: string): string | undefined {
  return typeof n[key] === "string" ? (n[key] as string) : undefined;
}

function parseNode(n: Obj & { id: string; kind: NodeKind }, at: (f: string) => string, ctx: IrContext, bad: (f: string, m: string) => void): IrNode | null {
  const input = (): string => {
    if (typeof n.input !== "string" || !n.input) bad(at("input"), "must name the node whose rows this one reads");
    return String(n.input ?? "");
  };
  switch (n.kind) {
    case "source":
      return parseSource(n, at, ctx, bad);
    case "transform": {
      const ops: TransformOp[] = [];
      if (!Array.isArray(n.ops) || !n.ops.length) bad(at("ops"), "must be a non-empty array");
      else
        n.ops.forEach((op, j) => {
          const f = (x: string) => at(`ops[${j}].${x}`);
          if (!isObj(op)) return bad(at(`ops[${j}]`), "must be an object");
          if (op.type === "rename") {
            if (!isIdentifier(op.from)) bad(f("from"), "must be a field name");
            if (!isIdentifier(op.to)) bad(f("to"), "must be a field name");
            // A rename onto itself would copy the field and then delete it: refused, never a silent loss.
            else if (op.to === op.from) bad(f("to"), "must differ from from");
            ops.push({ type: "rename", from: String(op.from), to: String(op.to) });
          } else if (op.type === "expression") {
            if (!isIdentifier(op.outputField)) bad(f("outputField"), "must be a field name");
            try {
              ops.push({ type: "expression", outputField: String(op.outputField), formula: String(op.formula), expr: parseExpression(op.formula as string) });
            } catch (err) {
              bad(f("formula"), err instanceof ExpressionError ? err.message : "does not parse");
            }
          } else bad(f("type"), "must be expression or rename");
        });
      return { id: n.id, kind: "transform", input: input(), ops };
    }
    case "validate": {
      const rowLevel: RowRule[] = [];
      if (n.rowLevel !== undefined && !Array.isArray(n.rowLevel)) bad(at("rowLevel"), "must be an array");
      else
        ((n.rowLevel as unknown[]) ?? []).forEach((r, j) => {
          const f = (x: string) => at(`rowLevel[${j}].${x}`);
          if (!isObj(r)) return bad(at(`rowLevel[${j}]`), "must be an object");
          if (r.type !== "regex" && r.type !== "notNull") return bad(f("type"), "must be regex or notNull");
          if (typeof r.field !== "string" || !r.field) bad(f("field"), "is required");
          const onFail = r.onFail ?? "abort";
          if (onFail !== "warn" && onFail !== "abort") bad(f("onFail"), "must be warn or abort");
          let pattern: RegExp | null = null;
          if (r.type === "regex") {
            if (typeof r.pattern !== "string" || !r.pattern || r.pattern.length > MAX_REGEX) bad(f("pattern"), `is required, at most ${MAX_REGEX} characters`);
            else
              try {
                pattern = new RegExp(r.pattern);
              } catch (err) {
                bad(f("pattern"), `does not compile: ${(err as Error).message}`);
              }
          }
          rowLevel.push({ type: r.type, field: String(r.field), pattern, onFail: onFail as "warn" | "abort" });
        });
      let rowCount: ValidateNode["rowCount"] = null;
      const ds = n.datasetLevel;
      if (ds !== undefined && !isObj(ds)) bad(at("datasetLevel"), "must be an object");
      else if (isObj(ds) && ds.rowCount !== undefined) {
        const rc = ds.rowCount;
        if (!isObj(rc)) bad(at("datasetLevel.rowCount"), "must be an object");
        else {
          const bound = (k: "min" | "max") => {
            if (rc[k] === undefined || rc[k] === null) return null;
            if (!Number.isInteger(rc[k]) || (rc[k] as number) < 0) bad(at(`datasetLevel.rowCount.${k}`), "must be a non-negative integer");
            return rc[k] as number;
          };
          const onFail = rc.onFail ?? "abort";
          if (onFail !== "warn" && onFail !== "abort") bad(at("datasetLevel.rowCount.onFail"), "must be warn or abort");
          rowCount = { min: bound("min"), max: bound("max"), onFail: onFail as "warn" | "abort" };
          if (rowCount.min !== null && rowCount.max !== null && rowCount.min > rowCount.max) bad(at("datasetLevel.rowCount.min"), "must not exceed max");
        }
      }
      let quarantine: ValidateNode["quarantine"] = null;
      if (n.quarantine !== undefined) {
        const q = n.quarantine;
        if (!isObj(q)) bad(at("quarantine"), "must be an object");
        else if (q.enabled === true) {
          if (!isIdentifier(q.table)) bad(at("quarantine.table"), "must be 1 to 40 letters, digits or underscores, starting with a letter");
          // ds_ names belong to schemas' tables: a quarantine there would write into data.
          else if (q.table.toLowerCase().startsWith("ds_")) bad(at("quarantine.table"), "must not start with ds_ (the prefix of schema tables)");
          quarantine = { enabled: true, table: String(q.table) };
        }
      }
      return { id: n.id, kind: "validate", input: input(), rowLevel, rowCount, quarantine };
    }
    case "target":
      return parseTarget(n, at, ctx, bad, input());
    case "decide": {
      if (typeof n.flowId !== "string" || !n.flowId) bad(at("flowId"), "is required");
      else if (!ctx.flows.some((f) => f.id === n.flowId || f.key === n.flowId)) bad(at("flowId"), `names no decision flow of this tenant: "${n.flowId}"`);
      const limit = n.limit ?? 3;
      if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > 20) bad(at("limit"), "must be an integer 1 to 20");
      return { id: n.id, kind: "decide", input: input(), flowId: String(n.flowId ?? ""), limit: limit as number };
    }
  }
}

function folder(v: unknown): string {
  return typeof v === "string" ? v.replace(/^\/+/, "").replace(/\/*$/, "/").replace(/^\/$/, "") : "";
}

function parseSource(n: Obj & { id: string }, at: (f: string) => string, ctx: IrContext, bad: (f: string, m: string) => void): SourceNode {
  let connector: string | null = ctx.defaultConnectorId;
  if (n.connector !== undefined) {
    const c = ctx.connectors.find((x) => x.id === n.connector || x.name === n.connector);
    if (!c) bad(at("connector"), `names no connector of this tenant: "${String(n.connector)}"`);
    else connector = c.id;
  } else if (!connector) bad(at("connector"), "is required when the pipeline has no connectorId");
  const c = isObj(n.config) ? n.config : {};
  if (n.config !== undefined && !isObj(n.config)) bad(at("config"), "must be an object");
  const format = (str(c, "format") ?? "csv").toLowerCase().replace("json_lines", "jsonl").replace("ndjson", "jsonl");
  if (!(FORMATS as readonly string[]).includes(format)) bad(at("config.format"), "must be csv or jsonl");
  const compression = str(c, "compression") ?? "auto";
  if (!["auto", "gzip", "none"].includes(compression)) bad(at("config.compression"), "must be auto, gzip or none");
  const delimiter = str(c, "delimiter") ?? ",";
  if (delimiter.length !== 1) bad(at("config.delimiter"), "must be one character");
  let pattern: SourceNode["pattern"] = null;
  if (c.pattern !== undefined) {
    const p = c.pattern;
    if (!isObj(p) || (p.type !== "glob" && p.type !== "regex") || typeof p.value !== "string" || !p.value || p.value.length > MAX_REGEX) {
      bad(at("config.pattern"), `must be {type: glob or regex, value} with a value of at most ${MAX_REGEX} characters`);
    } else {
      try {
        if (p.type === "regex") new RegExp(p.value);
        pattern = { type: p.type, value: p.value };
      } catch (err) {
        bad(at("config.pattern.value"), `does not compile: ${(err as Error).message}`);
      }
    }
  }
  const ordering = str(c, "ordering") ?? "all_by_name";
  if (!(ORDERINGS as readonly string[]).includes(ordering)) bad(at("config.ordering"), `must be one of ${ORDERINGS.join(", ")}`);
  let atomicity: SourceNode["atomicity"] = null;
  if (c.atomicity !== undefined) {
    const a = c.atomicity;
    if (!isObj(a)) bad(at("config.atomicity"), "must be an object");
    else {
      for (const k of ["stagingFolder", "successFolder", "failureFolder"]) {
        if (typeof a[k] !== "string" || !(a[k] as string).trim()) bad(at(`config.atomicity.${k}`), "is required");
      }
      atomicity = { stagingFolder: folder(a.stagingFolder), successFolder: folder(a.successFolder), failureFolder: folder(a.failureFolder) };
    }
  }
  let waitPolicy: SourceNode["waitPolicy"] = null;
  if (c.waitPolicy !== undefined) {
    const w = c.waitPolicy;
    if (!isObj(w)) bad(at("config.waitPolicy"), "must be an object");
    else {
      const maxRetries = w.maxRetries ?? 0;
      const intervalMinutes = w.intervalMinutes ?? 1;
      const onMissAction = w.onMissAction ?? "fail";
      if (!Number.isInteger(maxRetries) || (maxRetries as number) < 0 || (maxRetries as number) > 100) bad(at("config.waitPolicy.maxRetries"), "must be an integer 0 to 100");
      if (typeof intervalMinutes !== "number" || intervalMinutes < 0 || intervalMinutes > 1440) bad(at("config.waitPolicy.intervalMinutes"), "must be a number 0 to 1440");
      if (onMissAction !== "fail" && onMissAction !== "skip" && onMissAction !== "warn") bad(at("config.waitPolicy.onMissAction"), "must be fail, skip or warn");
      waitPolicy = { maxRetries: maxRetries as number, intervalMinutes: intervalMinutes as number, onMissAction: onMissAction as "fail" };
    }
  }
  let integrity: SourceNode["integrity"] = null;
  if (c.integrity !== undefined) {
    const g = c.integrity;
    if (!isObj(g)) bad(at("config.integrity"), "must be an object");
    else {
      const algorithm = g.algorithm ?? "sha256";
      if (algorithm !== "sha256" && algorithm !== "md5") bad(at("config.integrity.algorithm"), "must be sha256 or md5");
      const onMismatch = g.onMismatch ?? "fail";
      if (onMismatch !== "fail" && onMismatch !== "skip" && onMismatch !== "warn") bad(at("config.integrity.onMismatch"), "must be fail, skip or warn");
      if (g.sidecar !== undefined && typeof g.sidecar !== "boolean") bad(at("config.integrity.sidecar"), "must be a boolean");
      if (g.manifest !== undefined && (typeof g.manifest !== "string" || !g.manifest)) bad(at("config.integrity.manifest"), "must name the manifest's key");
      if (g.sidecar !== true && g.manifest === undefined) bad(at("config.integrity"), "needs sidecar: true or a manifest");
      integrity = { algorithm: algorithm as "sha256", sidecar: g.sidecar === true, manifest: typeof g.manifest === "string" ? g.manifest : null, onMismatch: onMismatch as "fail" };
    }
  }
  const path = atomicity ? atomicity.stagingFolder : folder(str(c, "path") ?? "");
  return { id: n.id, kind: "source", connector, path, format: format as Format, compression: compression as "auto", delimiter, pattern, ordering: ordering as Ordering, atomicity, waitPolicy, integrity };
}

function parseTarget(n: Obj & { id: string }, at: (f: string) => string, ctx: IrContext, bad: (f: string, m: string) => void, input: string): TargetNode {
  const schema = ctx.schemas.find((s) => s.id === n.schema || s.name === n.schema);
  if (typeof n.schema !== "string" || !schema) bad(at("schema"), `names no schema of this tenant: "${String(n.schema ?? "")}"`);
  const loadMode = n.loadMode as LoadMode;
  if (!(LOAD_MODES as readonly unknown[]).includes(loadMode)) bad(at("loadMode"), `must be one of ${LOAD_MODES.join(", ")}`);
  const fields = new Set(schema?.fields.map((f) => f.name) ?? []);
  let upsertKey: string[] = [];
  if (n.upsertKey !== undefined) {
    if (!Array.isArray(n.upsertKey) || n.upsertKey.some((k) => typeof k !== "string")) bad(at("upsertKey"), "must be an array of field names");
    else upsertKey = [...new Set(n.upsertKey as string[])];
  }
  const keyed = loadMode === "upsert" || loadMode === "cdc_mirror";
  if (keyed && !upsertKey.length) bad(at("upsertKey"), `is required for ${loadMode}`);
  if (schema) for (const k of upsertKey) if (!fields.has(k)) bad(at("upsertKey"), `"${k}" is not a field of schema ${schema.name}`);
  let watermarkColumn: string | null = null;
  if (loadMode === "incremental_watermark") {
    if (typeof n.watermarkColumn !== "string" || !n.watermarkColumn) bad(at("watermarkColumn"), "is required for incremental_watermark");
    else if (schema && !fields.has(n.watermarkColumn)) bad(at("watermarkColumn"), `"${n.watermarkColumn}" is not a field of schema ${schema.name}`);
    else {
      watermarkColumn = n.watermarkColumn;
      const f = schema?.fields.find((x) => x.name === watermarkColumn);
      if (f && (f.dataType === "jsonb" || f.dataType === "boolean")) bad(at("watermarkColumn"), "must be an ordered type (number, text, date or timestamp)");
    }
  }
  const operationColumn = n.operationColumn ?? "op";
  if (typeof operationColumn !== "string" || !operationColumn) bad(at("operationColumn"), "must be a field name");
  if (n.failOnEmptySource !== undefined && typeof n.failOnEmptySource !== "boolean") bad(at("failOnEmptySource"), "must be a boolean");
  return {
    id: n.id,
    kind: "target",
    input,
    schemaId: schema?.id ?? "",
    loadMode,
    upsertKey,
    watermarkColumn,
    operationColumn: String(operationColumn),
    failOnEmptySource: n.failOnEmptySource !== false,
  };
}

function topologicalOrder(nodes: IrNode[]): string[] | null {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const state = new Map<string, 1 | 2>();
  const out: string[] = [];
  const visit = (id: string): boolean => {
    const s = state.get(id);
    if (s === 2) return true;
    if (s === 1) return false;
    state.set(id, 1);
    const n = byId.get(id);
    if (n && n.kind !== "source" && byId.has(n.input) && !visit(n.input)) return false;
    state.set(id, 2);
    out.push(id);
    return true;
  };
  for (const n of nodes) if (!visit(n.id)) return null;
  return out;
}

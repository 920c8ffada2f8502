import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import {
  ImportReportSchema,
  type ExportEntityRequest,
  type ImportReport,
  type ImportRequest,
  type ImportedEntity,
} from "../../gen/decisioning/v1/portability_pb.js";
import { ImportedEntitySchema } from "../../gen/decisioning/v1/portability_pb.js";
import { download } from "../audit/audit-service.js";
import type { AuditLog } from "../audit/audit-log.js";
import { importedKey, importedName, referencedFirst, rewire } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { isUnstorableValue, pgErrorCode, type Transaction } from "../platform/db.js";
import { AppError, conflict, invalidField, invalidFields, notFound } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { columnRow, fileRow, FORMAT_VERSION, parseImport, type ExportFile, type ExportKind } from "./export-file.js";
import { EXPORTABLE_KINDS, kindByName, type ExportableKind, type ImportTenant, type Reference, type Renamed } from "./exportable-kinds.js";
import { columnViolations, withoutUnsetNulls } from "../catalog/write-fields.js";
import type { PortabilityStore, Row } from "./portability-store.js";

export interface PortabilityDeps {
  db: Sequelize;
  store: PortabilityStore;
  audit: AuditLog;
  /** The decisions' snapshot invalidation, after an import commits. */
  configChanged(tenantId: string): void;
  /** What another domain does beside an imported row, in the import's transaction (a schema's table), by kind. */
  afterImport?: Readonly<Record<string, (t: Transaction, tenantId: string, row: Row) => Promise<void>>>;
}

/** One row on its way in: where it is in the file (for messages), and its new identity. */
interface Incoming {
  kind: ExportableKind;
  index: number;
  row: Row;
  sourceId: string | null;
  /** Its imported key, for kinds with one. */
  key?: string;
}

/** Export files and imports of them (spec 4.13, docs/portability.md). */
export class PortabilityService {
  constructor(private readonly deps: PortabilityDeps) {}

  async exportFull(ctx: TenantContext): Promise<HttpBody> {
    const entities: Record<string, Row[]> = {};
    for (const kind of EXPORTABLE_KINDS) {
      const rows = await this.deps.store.rows(kind, ctx.tenantId);
      const selfReferences = Object.entries(kind.references ?? {}).filter(([, ref]) => ref.table === kind.table).map(([column]) => column);
      entities[kind.kind] = (selfReferences.length && kind.idColumn ? referencedFirst(rows, kind.idColumn, selfReferences) : rows).map(fileRow);
    }
    return this.file("full", entities, `export-${ctx.tenantId}`);
  }

  async exportDecisionFlow(ctx: TenantContext, req: ExportEntityRequest): Promise<HttpBody> {
    const flows = kindByName.get("decisionFlows")!;
    const [flow] = await this.entity(ctx, flows, req.id, "decision flow");
    const versions = await this.deps.store.rows(kindByName.get("decisionFlowVersions")!, ctx.tenantId, flow.id as string);
    return this.file("decision_flow", { decisionFlows: [fileRow(flow)], decisionFlowVersions: versions.map(fileRow) }, `decision-flow-${flow.key}`);
  }

  /** The model, and under `versions` each version its audit trail recorded (import ignores them). */
  async exportModel(ctx: TenantContext, req: ExportEntityRequest): Promise<HttpBody> {
    const models = kindByName.get("algorithmModels")!;
    const [model] = await this.entity(ctx, models, req.id, "algorithm model");
    const audited = await this.deps.store.auditedVersions(ctx.tenantId, models.entityType, model.id as string);
    // The audit snapshots name the tenant; a file never does (docs/portability.md).
    const versions = audited.map(({ snapshot, ...version }) => {
      const { tenantId: _, ...rest } = (snapshot ?? {}) as Row;
      return { ...version, snapshot: rest };
    });
    return this.file("model", { algorithmModels: [{ ...fileRow(model), versions }] }, `model-${model.key}`);
  }

  async importConfiguration(ctx: TenantContext, req: ImportRequest): Promise<ImportReport> {
    const parsed = parseImport({ formatVersion: req.formatVersion, kind: req.kind, entities: req.entities as Record<string, unknown> | undefined });
    const suffix = randomBytes(3).toString("hex");
    const incoming: Incoming[] = [];
    for (const { kind, rows } of parsed.batches) {
      const columns = await this.deps.store.importableColumns(kind);
      rows.forEach((row, index) => incoming.push({ kind, index, row: columnRow(row, columns), sourceId: null }));
    }
    // New ids and keys for every row first: a row may name one that comes later in the file.
    const ids = new Map<string, string>();
    // Keys of the usual form, rewired under `...Key` properties; every kind's renamed keys and names, by kind.
    const keys = new Map<string, string>();
    const renamedKeys = new Map<string, Map<string, string>>();
    const renamedNames = new Map<string, Map<string, string>>();
    const note = (byKind: Map<string, Map<string, string>>, kind: string, from: string, to: string) => {
      if (!byKind.has(kind)) byKind.set(kind, new Map());
      byKind.get(kind)!.set(from, to);
    };
    for (const item of incoming) {
      const { kind, row } = item;
      if (kind.idColumn) {
        const id = row[kind.idColumn];
        if (typeof id !== "string" || !isUuid(id)) throw invalidField(this.path(item, "id"), "must be the UUID the export wrote");
        if (ids.has(id)) throw invalidField(this.path(item, "id"), "appears twice in the file");
        item.sourceId = id;
        ids.set(id, newId());
      }
      if (kind.keyColumn && typeof row[kind.keyColumn] === "string") {
        const key = row[kind.keyColumn] as string;
        item.key = (kind.importedKey ?? importedKey)(key, suffix);
        if (!kind.importedKey) keys.set(key, item.key);
        note(renamedKeys, kind.kind, key, item.key);
      }
      if (kind.nameColumn && typeof row[kind.nameColumn] === "string") note(renamedNames, kind.kind, row[kind.nameColumn] as string, importedName(row[kind.nameColumn] as string));
    }
    const renamed: Renamed = { key: (kind, key) => renamedKeys.get(kind)?.get(key), name: (kind, name) => renamedNames.get(kind)?.get(name) };
    const map = { ids, keys };
    const entities: ImportedEntity[] = [];
    const imported: Record<string, number> = {};
    await tenantWriteTransaction(this.deps.db, ctx.tenantId, async (t) => {
      // The tenant as this transaction sees it: the rows imported so far, and its own. Read once per
      // kind until a row of that kind is inserted: 500 IR versions check against the same schemas,
      // connectors and flows.
      const read = new Map<string, Map<string, Promise<Row[]>>>();
      const tenant: ImportTenant = {
        rows: (kindName, entityId) => {
          let byEntity = read.get(kindName);
          if (!byEntity) read.set(kindName, (byEntity = new Map()));
          let rows = byEntity.get(entityId ?? "");
          if (!rows) byEntity.set(entityId ?? "", (rows = this.deps.store.rows(kindByName.get(kindName)!, ctx.tenantId, entityId, t)));
          return rows;
        },
      };
      for (const item of incoming) {
        const { kind } = item;
        const row = withoutUnsetNulls(rewire(item.row, map) as Row, kind.rules ?? []);
        kind.rewireKeys?.(row, renamed);
        Object.assign(row, kind.onImport);
        if (kind.idColumn) row[kind.idColumn] = ids.get(item.sourceId!);
        if (kind.nameColumn) {
          if (typeof row[kind.nameColumn] !== "string" || !(row[kind.nameColumn] as string).trim()) throw invalidField(this.path(item, kind.nameColumn), "is required");
          row[kind.nameColumn] = importedName(row[kind.nameColumn] as string);
        }
        if (kind.keyColumn) {
          if (item.key === undefined) throw invalidField(this.path(item, kind.keyColumn), "is required");
          row[kind.keyColumn] = item.key;
        }
        // Columns computed from the key, the direct write routes' rules, then (only on a well-formed
        // row) the shapes and references.
        let problems = kind.keyColumn ? (kind.rekey?.(row, item.row[kind.keyColumn] as string) ?? []) : [];
        if (!problems.length) problems = columnViolations(row, kind.rules ?? []);
        if (!problems.length) problems = (await kind.validate?.(row, tenant)) ?? [];
        if (problems.length) throw invalidFields(problems.map((p) => ({ field: `entities.${kind.kind}[${item.index}].${p.field}`, message: p.message })));
        await this.checkReferences(t, ctx.tenantId, item, row);
        await this.deps.store.insert(t, kind, ctx.tenantId, row).catch((err) => {
          throw this.insertError(item, row, err);
        });
        read.delete(kind.kind);
        await this.deps.afterImport?.[kind.kind]?.(t, ctx.tenantId, row);
        imported[kind.kind] = (imported[kind.kind] ?? 0) + 1;
        if (!kind.idColumn) continue;
        const name = kind.nameColumn ? (row[kind.nameColumn] as string) : "";
        entities.push(create(ImportedEntitySchema, { kind: kind.kind, sourceId: item.sourceId!, id: row.id as string, name, key: kind.keyColumn ? (row[kind.keyColumn] as string) : undefined }));
        await this.deps.audit.record(t, ctx, {
          action: "create",
          entityType: kind.entityType,
          entityId: row.id as string,
          entityName: name || null,
          before: null,
          after: fileRow(row),
          entityVersion: 1,
          changes: { imported: true, sourceId: item.sourceId },
        });
      }
    });
    this.deps.configChanged(ctx.tenantId);
    return create(ImportReportSchema, { imported, entities });
  }

  /**
   * Reference columns, and the ids and keys the kind names inside its JSON configs, must name rows of
   * the tenant: imported ones (already inserted, in this transaction) or its own. The write routes
   * check the same references, but outside this transaction, where the imported rows are not yet seen.
   */
  private async checkReferences(t: Transaction, tenantId: string, item: Incoming, row: Row): Promise<void> {
    const named: Array<{ field: string; ref: Reference; values: unknown[] }> = [
      ...Object.entries(item.kind.references ?? {})
        .filter(([column]) => row[column] !== null && row[column] !== undefined)
        .map(([column, ref]) => ({ field: this.path(item, column), ref, values: Array.isArray(row[column]) ? (row[column] as unknown[]) : [row[column]] })),
      ...(item.kind.innerReferences?.(row) ?? []).map((r) => ({ field: `entities.${item.kind.kind}[${item.index}].${r.field}`, ref: r.ref, values: [r.value] })),
    ];
    for (const { field, ref, values } of named) {
      const byKey = ref.column === "key";
      if (!values.every((v) => typeof v === "string" && (byKey || isUuid(v)))) throw invalidField(field, byKey ? "must name keys" : "must name ids");
      const found = await this.deps.store.existing(t, ref, tenantId, values as string[]);
      const missing = (values as string[]).find((v) => !found.has(v));
      const what = ref.entryKind?.replace("_", " ") ?? ref.table.replace(/_/g, " ").replace(/s$/, "");
      if (missing) throw invalidField(field, `names ${missing}, which is no ${what} in the file or in this tenant`);
    }
  }

  /** Database refusals of one row, said about that row: never a 500 for a bad file. */
  private insertError(item: Incoming, row: Row, err: unknown): unknown {
    const code = pgErrorCode(err);
    const at = `entities.${item.kind.kind}[${item.index}]`;
    if (code === "23505") {
      const { nameColumn, keyColumn, entityType } = item.kind;
      const named = [nameColumn && `named ${JSON.stringify(row[nameColumn])}`, keyColumn && `keyed ${JSON.stringify(row[keyColumn])}`].filter(Boolean).join(" or ");
      return conflict("DUPLICATE", `${at}: a ${entityType} ${named || "like it"} already exists`);
    }
    if (code === "23502" || code === "23514" || code === "23503" || code === "22P02" || code === "22023" || code === "42804" || isUnstorableValue(err)) {
      const detail = (err as { original?: { message?: string } }).original?.message ?? "invalid value";
      return new AppError({ code: "INVALID_ARGUMENT", reason: "VALIDATION_FAILED", message: `${at}: ${detail}`, cause: err });
    }
    return err;
  }

  private path(item: Incoming, column: string): string {
    return `entities.${item.kind.kind}[${item.index}].${column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())}`;
  }

  private async entity(ctx: TenantContext, kind: ExportableKind, id: string, label: string): Promise<Row[]> {
    if (!isUuid(id)) throw notFound(label, id);
    const rows = await this.deps.store.rows(kind, ctx.tenantId, id);
    if (!rows.length) throw notFound(label, id);
    return rows;
  }

  private file(kind: ExportKind, entities: Record<string, Row[]>, name: string): HttpBody {
    const file: ExportFile = { formatVersion: FORMAT_VERSION, kind, exportedAt: new Date().toISOString(), entities };
    return download(JSON.stringify(file, null, 2), "application/json", `${name.replace(/[^A-Za-z0-9._-]/g, "_")}.json`);
  }
}

import { create, type DescMessage, type Message, type MessageShape } from "@bufbuild/protobuf";
import type { FieldMask } from "@bufbuild/protobuf/wkt";
import { CatalogIdRequestSchema, DeleteResponseSchema, type CatalogIdRequest, type DeleteResponse } from "../../gen/decisioning/v1/catalog_pb.js";
import type { WriteTarget } from "./write-targets.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, isAppError, conflict, notFound, type FieldViolation } from "../platform/errors.js";
import { isUniqueViolation } from "../platform/db.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { CatalogRow, CatalogStore, CatalogTable, EntryKind, RowFilter } from "./catalog-store.js";
import { snapshot } from "./catalog-mapper.js";
import { columnsFromWrite, type ColumnValues, type FieldRule } from "./write-fields.js";
import { listFilters, referenceViolations, throwIfInvalid } from "./catalog-support.js";

/** The lists of budgets, models and flows carry `q` and `status`; those of creatives and entries do not. */
type ListRequest = { limit?: number; cursor: string; includeDeleted: boolean; q?: string; status?: string };

export interface CollectionSpec<M extends DescMessage, L extends DescMessage> {
  table: CatalogTable;
  /** Audit entity type (spec 2.6). */
  entityType: string;
  /** The noun in messages. */
  label: string;
  schema: M;
  writeSchema: DescMessage;
  listSchema: L;
  toMessage: (row: CatalogRow) => MessageShape<M>;
  rules: readonly FieldRule[];
  /** Columns holding references that must name live rows of the tenant. */
  references: ReadonlyArray<{ column: string; field: string; kind: EntryKind | "offer" }>;
  /** Rows of this collection within the table (the entry kind). */
  filter: RowFilter;
  /** Column values of new rows: the entry kind, and defaults the body may override. */
  fixed: ColumnValues;
  /**
   * Rules across fields and against the core's shapes, given the row as it would be after the
   * write (`before` is null on create).
   */
  validate?: (ctx: TenantContext, after: ColumnValues, before: CatalogRow | null) => Promise<FieldViolation[]>;
  /** Column values a valid write also sets, read from the row as it would be after it (in the write's transaction). */
  derive?: (ctx: TenantContext, after: ColumnValues, before: CatalogRow | null, t: Transaction) => Promise<ColumnValues>;
}

type WriteMessage = Message & { id: string; updateMask?: FieldMask };

/**
 * Create, read, update, soft-delete and list for one catalog collection, every write audit-logged in
 * its transaction. Offers add their own rules on top (offer-service.ts); everything else is this.
 */
export class CatalogCollection<M extends DescMessage, L extends DescMessage> {
  constructor(
    private readonly store: CatalogStore,
    private readonly audit: AuditLog,
    readonly spec: CollectionSpec<M, L>,
  ) {}

  async list(ctx: TenantContext, req: ListRequest, filter: RowFilter = {}): Promise<MessageShape<L>> {
    const page = cursorPageRequest(req);
    const search = listFilters(req, this.spec.rules);
    const rows = await this.store.page(this.spec.table, ctx.tenantId, page, req.includeDeleted, { ...this.spec.filter, ...filter, ...search.filter }, search.nameContains);
    const result = cursorPage(rows, page.limit);
    return create(this.spec.listSchema, { data: result.rows.map(this.spec.toMessage), pagination: result.pagination } as never);
  }

  async get(ctx: TenantContext, req: CatalogIdRequest): Promise<MessageShape<M>> {
    return this.spec.toMessage(await this.mustFind(ctx.tenantId, req.id));
  }

  async create(ctx: TenantContext, req: WriteMessage, t?: Transaction): Promise<MessageShape<M>> {
    const { values, violations } = columnsFromWrite(this.spec.writeSchema, req, this.spec.rules, "create");
    await this.checkReferences(ctx, values, violations, null);
    const write = async (tx: Transaction) => {
      const derived = await this.derived(ctx, values, null, tx);
      const row = await this.conflicts(this.store.insert(tx, this.spec.table, ctx.tenantId, { id: newId(), ...this.spec.fixed, ...values, ...derived }), values);
      await this.record(tx, ctx, "create", null, row);
      return row;
    };
    return this.spec.toMessage(await this.store.transaction(ctx.tenantId, write, t));
  }

  /** `t`: an outer transaction to write in (an approval's), as in create. */
  async update(ctx: TenantContext, req: WriteMessage, t?: Transaction): Promise<MessageShape<M>> {
    if (!req.id) throw invalidField("id", "is required");
    const { values, violations } = columnsFromWrite(this.spec.writeSchema, req, this.spec.rules, "update");
    const row = await this.store.transaction(
      ctx.tenantId,
      async (tx) => {
        const before = await this.mustFind(ctx.tenantId, req.id, tx);
        await this.checkReferences(ctx, values, violations, before);
        const derived = await this.derived(ctx, values, before, tx);
        const after = await this.conflicts(this.store.update(tx, this.spec.table, ctx.tenantId, before.id, { ...values, ...derived }, true), values);
        await this.record(tx, ctx, "update", before, after);
        return after;
      },
      t,
    );
    return this.spec.toMessage(row);
  }

  /** Soft delete with a version increment, as a cascade from an offer would do. */
  async delete(ctx: TenantContext, req: CatalogIdRequest, t?: Transaction): Promise<DeleteResponse> {
    if (!req.id) throw invalidField("id", "is required");
    await this.store.transaction(
      ctx.tenantId,
      async (tx) => {
        const before = await this.mustFind(ctx.tenantId, req.id, tx);
        const after = await this.store.update(tx, this.spec.table, ctx.tenantId, before.id, { deleted_at: new Date() }, true);
        await this.record(tx, ctx, "soft_delete", before, after);
      },
      t,
    );
    return create(DeleteResponseSchema, { success: true, id: req.id, cascaded: 0 });
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<CatalogRow> {
    const row = isUuid(id) ? await this.store.find(this.spec.table, tenantId, { id }, { filter: this.spec.filter, t }) : null;
    if (!row) throw notFound(this.spec.label, id);
    return row;
  }

  private async checkReferences(ctx: TenantContext, values: ColumnValues, violations: FieldViolation[], before: CatalogRow | null) {
    violations.push(
      ...(await referenceViolations(
        this.store,
        ctx.tenantId,
        this.spec.references.map((r) => ({ field: r.field, kind: r.kind, id: values[r.column] })),
      )),
    );
    // Cross-field rules read the resulting row; they are moot while single fields are wrong.
    if (!violations.length && this.spec.validate) {
      violations.push(...(await this.spec.validate(ctx, { ...this.spec.fixed, ...before, ...values }, before)));
    }
    throwIfInvalid(violations);
  }

  private async derived(ctx: TenantContext, values: ColumnValues, before: CatalogRow | null, t: Transaction): Promise<ColumnValues> {
    return this.spec.derive ? this.spec.derive(ctx, { ...this.spec.fixed, ...before, ...values }, before, t) : {};
  }

  /** A live unique index refused the write: 409 naming the name or key that collided. */
  private async conflicts(work: Promise<CatalogRow>, values: ColumnValues): Promise<CatalogRow> {
    try {
      return await work;
    } catch (err) {
      if (isAppError(err) || !isUniqueViolation(err)) throw err;
      const constraint = String((err as { original?: { constraint?: string } }).original?.constraint ?? "");
      const [field, value] = constraint.endsWith("_key") ? ["key", values.key] : ["name", values.name];
      throw conflict(field === "key" ? "DUPLICATE_KEY" : "DUPLICATE_NAME", `${field}: a ${this.spec.label} with ${field} "${value}" already exists`);
    }
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "soft_delete", before: CatalogRow | null, after: CatalogRow) {
    return this.audit.record(t, ctx, {
      action,
      entityType: this.spec.entityType,
      entityId: after.id,
      entityName: after.name,
      before: before ? snapshot(this.spec.schema, before) : null,
      after: snapshot(this.spec.schema, after),
      entityVersion: after.version,
    });
  }
}

/** A collection as a write target for other domains (write-targets.ts). */
export function collectionTarget<M extends DescMessage, L extends DescMessage>(c: CatalogCollection<M, L>): WriteTarget {
  // Every catalog message has an id.
  const withId = (m: unknown) => m as { id: string };
  return {
    writeSchema: c.spec.writeSchema,
    create: async (ctx, req, t) => withId(await c.create(ctx, req as WriteMessage, t)),
    update: async (ctx, req, t) => withId(await c.update(ctx, req, t)),
    delete: (ctx, id, t) => c.delete(ctx, create(CatalogIdRequestSchema, { id }), t),
  };
}

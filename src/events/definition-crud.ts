import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation } from "../platform/db.js";
import { conflict, isAppError, notFound } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import type { DefinitionRow, DefinitionStore } from "./definition-store.js";

export interface DefinitionCrudOptions<Row extends DefinitionRow> {
  store: DefinitionStore<Row>;
  audit: AuditLog;
  /** The audit entity type and the word in 404 messages: `trigger`, `journey`. */
  entityType: string;
  /** The audited snapshot of a row: its definition, no customer data. */
  snapshot(row: Row): Record<string, unknown>;
}

/**
 * Create, read, replace and soft-delete for trigger rules and journeys, which differ only in their
 * definitions: each write takes the tenant's write lock, writes its audit entry in the same
 * transaction, and a live name is unique per tenant (409). Callers validate the values first.
 */
export class DefinitionCrud<Row extends DefinitionRow> {
  constructor(private readonly o: DefinitionCrudOptions<Row>) {}

  async page(ctx: TenantContext, req: { limit?: number; cursor: string }) {
    const page = cursorPageRequest(req);
    return cursorPage(await this.o.store.page(ctx.tenantId, page), page.limit);
  }

  /** A live row of the caller's tenant; another tenant's id, or a malformed one, is a 404. */
  async get(ctx: TenantContext, id: string): Promise<Row> {
    const row = isUuid(id) ? await this.o.store.find(ctx.tenantId, id) : null;
    if (!row) throw notFound(this.o.entityType, id);
    return row;
  }

  async create(ctx: TenantContext, values: Record<string, unknown> & { name: string }): Promise<Row> {
    return this.named(values.name, () =>
      this.o.store.transaction(ctx.tenantId, async (t) => {
        const row = await this.o.store.insert(t, ctx.tenantId, { id: newId(), ...values });
        await this.o.audit.record(t, ctx, {
          action: "create", entityType: this.o.entityType, entityId: row.id, entityName: row.name,
          before: null, after: this.o.snapshot(row), entityVersion: row.version,
        });
        return row;
      }),
    );
  }

  async replace(ctx: TenantContext, id: string, values: Record<string, unknown> & { name: string }): Promise<Row> {
    if (!isUuid(id)) throw notFound(this.o.entityType, id);
    return this.named(values.name, () =>
      this.o.store.transaction(ctx.tenantId, async (t) => {
        const before = await this.o.store.find(ctx.tenantId, id, t);
        if (!before) throw notFound(this.o.entityType, id);
        const row = await this.o.store.update(t, ctx.tenantId, id, values);
        await this.o.audit.record(t, ctx, {
          action: "update", entityType: this.o.entityType, entityId: row.id, entityName: row.name,
          before: this.o.snapshot(before), after: this.o.snapshot(row), entityVersion: row.version,
        });
        return row;
      }),
    );
  }

  async remove(ctx: TenantContext, id: string): Promise<void> {
    if (!isUuid(id)) throw notFound(this.o.entityType, id);
    await this.o.store.transaction(ctx.tenantId, async (t) => {
      const before = await this.o.store.find(ctx.tenantId, id, t);
      if (!before) throw notFound(this.o.entityType, id);
      await this.o.store.softDelete(t, ctx.tenantId, id);
      await this.o.audit.record(t, ctx, {
        action: "soft_delete", entityType: this.o.entityType, entityId: id, entityName: before.name,
        before: this.o.snapshot(before), after: null, entityVersion: before.version,
      });
    });
  }

  /** The live-name index refused the write: 409 naming the name. */
  private async named(name: string, work: () => Promise<Row>): Promise<Row> {
    try {
      return await work();
    } catch (err) {
      if (!isAppError(err) && isUniqueViolation(err)) throw conflict("DUPLICATE_NAME", `name: a ${this.o.entityType} named "${name}" already exists`);
      throw err;
    }
  }
}

import { create } from "@bufbuild/protobuf";
import { EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  ListSchemasResponseSchema,
  type DataSchema,
  type IngestionIdRequest,
  type ListIngestionRequest,
  type ListSchemasResponse,
  type SchemaWrite,
} from "../../gen/decisioning/v1/ingestion_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import { ENTITY_TYPES, isIdentifier, normalizeFields, type EntityType } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { conflict, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { schemaSnapshot, toDataSchema } from "./ingestion-mapper.js";
import type { SchemaRow, SchemaStore } from "./schema-store.js";

export interface SchemaDeps {
  db: Sequelize;
  store: SchemaStore;
  audit: AuditLog;
}

/**
 * Schemas (spec 2.21, 4.20; docs/ingestion.md): each is a real table, `ds_<name>`, created with its
 * row and audit entry in one transaction, and dropped only when no pipeline uses it.
 */
export class SchemaService {
  constructor(private readonly deps: SchemaDeps) {}

  async listSchemas(ctx: TenantContext, req: ListIngestionRequest): Promise<ListSchemasResponse> {
    const page = cursorPageRequest(req);
    const result = cursorPage(await this.deps.store.page(ctx.tenantId, page), page.limit);
    return create(ListSchemasResponseSchema, { data: result.rows.map(toDataSchema), pagination: result.pagination });
  }

  async getSchema(ctx: TenantContext, req: IngestionIdRequest): Promise<DataSchema> {
    return toDataSchema(await this.mustFind(ctx.tenantId, req.id));
  }

  async createSchema(ctx: TenantContext, req: SchemaWrite): Promise<DataSchema> {
    const v: FieldViolation[] = [];
    const name = req.name.trim();
    if (!isIdentifier(name)) v.push({ field: "name", message: "must be 1 to 40 letters, digits or underscores, starting with a letter" });
    const entityType = (req.entityType.trim() || "custom") as EntityType;
    if (!ENTITY_TYPES.includes(entityType)) v.push({ field: "entityType", message: `must be one of ${ENTITY_TYPES.join(", ")}` });
    const fields = normalizeFields(
      req.fields.map((f) => ({ ...f })),
      v,
    );
    if (v.length) throw invalidFields(v);
    const row = await tenantWriteTransaction(this.deps.db, ctx.tenantId, async (t) => {
      const row = await this.deps.store
        .insert(t, ctx.tenantId, {
          id: newId(),
          name,
          display_name: req.displayName.trim().slice(0, 255) || name,
          entity_type: entityType,
          // Lower case: the table's name is what PostgreSQL folds unquoted names to, so SQL written by hand finds it.
          table_name: `ds_${name.toLowerCase()}`,
          fields,
        })
        .catch((err) => {
          if (isUniqueViolation(err)) throw conflict("SCHEMA_NAME_TAKEN", `name: a schema named "${name}" exists`);
          throw err;
        });
      await this.record(t, ctx, "create", null, row);
      return row;
    });
    return toDataSchema(row);
  }

  async deleteSchema(ctx: TenantContext, req: IngestionIdRequest): Promise<Empty> {
    await tenantWriteTransaction(this.deps.db, ctx.tenantId, async (t) => {
      const row = await this.mustFind(ctx.tenantId, req.id, t);
      if (await this.deps.store.inUse(ctx.tenantId, row.id, t)) throw conflict("SCHEMA_IN_USE", "a pipeline uses this schema; delete or change the pipeline first");
      await this.deps.store.remove(t, ctx.tenantId, row);
      await this.record(t, ctx, "delete", row, null);
    });
    return create(EmptySchema);
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<SchemaRow> {
    const row = isUuid(id) ? await this.deps.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("schema", id);
    return row;
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "delete", before: SchemaRow | null, after: SchemaRow | null) {
    const subject = (after ?? before)!;
    return this.deps.audit.record(t, ctx, {
      action,
      entityType: "schema",
      entityId: subject.id,
      entityName: subject.name,
      before: before ? schemaSnapshot(toDataSchema(before)) : null,
      after: after ? schemaSnapshot(toDataSchema(after)) : null,
      entityVersion: null,
    });
  }
}

import { create } from "@bufbuild/protobuf";
import { EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import {
  ListAiRecommendationsResponseSchema,
  type AiRecommendation,
  type AiRecommendationWrite,
  type GetAiRecommendationRequest,
  type ListAiRecommendationsRequest,
  type ListAiRecommendationsResponse,
} from "../../gen/decisioning/v1/approvals_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { AppError, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { AuditLog } from "../audit/audit-log.js";
import { CATALOG_WRITE_TYPES, type CatalogWriteType } from "../catalog/write-targets.js";
import { toRecommendation } from "./approval-mapper.js";
import type { ChangeExecutor } from "./change-executor.js";
import type { RecommendationRow, RecommendationStore } from "./recommendation-store.js";

const MAX_RATIONALE = 5000;
const STATUSES = ["pending", "applied"];

const snapshot = (row: RecommendationRow) => ({
  entityType: row.entity_type,
  entityId: row.entity_id,
  patch: row.patch,
  rationale: row.rationale,
  status: row.status,
});

/**
 * AI recommendations (spec 4.10, docs/approvals.md#ai-recommendations): a suggested update of one
 * catalog entity with its rationale. The patch is checked by the target's own validation when it is
 * written, and applied by the same executor an approval uses.
 */
export class RecommendationService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: RecommendationStore,
    private readonly executor: ChangeExecutor,
    private readonly audit: AuditLog,
  ) {}

  async listAiRecommendations(ctx: TenantContext, req: ListAiRecommendationsRequest): Promise<ListAiRecommendationsResponse> {
    if (req.status !== undefined && !STATUSES.includes(req.status)) throw invalidFields([{ field: "status", message: "must be pending or applied" }]);
    const page = cursorPageRequest(req);
    const result = cursorPage(await this.store.page(ctx.tenantId, page, req.status ?? null), page.limit);
    return create(ListAiRecommendationsResponseSchema, { data: result.rows.map(toRecommendation), pagination: result.pagination });
  }

  async getAiRecommendation(ctx: TenantContext, req: GetAiRecommendationRequest): Promise<AiRecommendation> {
    return toRecommendation(await this.mustFind(ctx.tenantId, req.id));
  }

  async createAiRecommendation(ctx: TenantContext, req: AiRecommendationWrite): Promise<AiRecommendation> {
    const violations: FieldViolation[] = [];
    if (req.entityType === undefined) violations.push({ field: "entityType", message: "is required" });
    if (req.entityId === undefined) violations.push({ field: "entityId", message: "is required" });
    const fields = checkFields(req, violations);
    await this.executor.check(ctx, { entityType: fields.entity_type!, action: "update", entityId: fields.entity_id!, payload: fields.patch ?? {} }, "patch");
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const stored = await this.store.insert(t, ctx.tenantId, {
        id: newId(),
        entity_type: fields.entity_type!,
        entity_id: fields.entity_id!,
        patch: fields.patch ?? {},
        rationale: fields.rationale ?? "",
        created_by_name: ctx.actorName,
      });
      await this.record(t, ctx, "create", null, stored);
      return stored;
    });
    return toRecommendation(row);
  }

  /** A pending recommendation's fields; an applied one is history and stays as it was. */
  async updateAiRecommendation(ctx: TenantContext, req: AiRecommendationWrite): Promise<AiRecommendation> {
    const fields = checkFields(req, []);
    const current = await this.mustFind(ctx.tenantId, req.id);
    // The dry run takes the tenant's write lock itself, so it runs before the write's transaction.
    await this.executor.check(ctx, {
      entityType: (fields.entity_type ?? current.entity_type) as CatalogWriteType,
      entityId: fields.entity_id ?? current.entity_id,
      action: "update",
      payload: fields.patch ?? current.patch,
    }, "patch");
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      if (before.status === "applied") {
        throw new AppError({ code: "FAILED_PRECONDITION", reason: "APPROVAL_RESOLVED", message: `ai recommendation ${before.id} is applied and cannot change` });
      }
      const after = await this.store.update(t, ctx.tenantId, before.id, fields);
      await this.record(t, ctx, "update", before, after);
      return after;
    });
    return toRecommendation(row);
  }

  async deleteAiRecommendation(ctx: TenantContext, req: GetAiRecommendationRequest): Promise<Empty> {
    await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      await this.store.delete(t, ctx.tenantId, before.id);
      await this.record(t, ctx, "delete", before, null);
    });
    return create(EmptySchema);
  }

  /** POST /ai/recommendations/{id}/apply: the executor an approval uses; applied already is a no-op. */
  async applyAiRecommendation(ctx: TenantContext, req: GetAiRecommendationRequest): Promise<AiRecommendation> {
    const row = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      if (before.status === "applied") return before;
      await this.executor.applyRecommendation(ctx, t, before.id);
      const after = (await this.store.find(ctx.tenantId, before.id, t))!;
      await this.record(t, ctx, "update", before, after);
      return after;
    });
    return toRecommendation(row);
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<RecommendationRow> {
    const row = isUuid(id) ? await this.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("ai recommendation", id);
    return row;
  }

  private record(t: Transaction, ctx: TenantContext, action: "create" | "update" | "delete", before: RecommendationRow | null, after: RecommendationRow | null) {
    const row = (after ?? before)!;
    return this.audit.record(t, ctx, {
      action,
      entityType: "ai_recommendation",
      entityId: row.id,
      entityName: `${row.entity_type} ${row.entity_id}`,
      before: before ? snapshot(before) : null,
      after: after ? snapshot(after) : null,
      entityVersion: null,
    });
  }
}

/** The written fields as columns; problems (with those already found) as one 400. */
function checkFields(req: AiRecommendationWrite, violations: FieldViolation[]) {
  const fields: Partial<Pick<RecommendationRow, "patch" | "rationale">> & { entity_type?: CatalogWriteType; entity_id?: string } = {};
  if (req.entityType !== undefined) {
    if (!CATALOG_WRITE_TYPES.includes(req.entityType as CatalogWriteType)) {
      violations.push({ field: "entityType", message: `must be one of ${CATALOG_WRITE_TYPES.join(", ")}` });
    } else fields.entity_type = req.entityType as CatalogWriteType;
  }
  if (req.entityId !== undefined) {
    if (!isUuid(req.entityId)) violations.push({ field: "entityId", message: "must be an id" });
    else fields.entity_id = req.entityId;
  }
  if (req.patch !== undefined) fields.patch = req.patch;
  if (req.rationale !== undefined) {
    if (req.rationale.length > MAX_RATIONALE) violations.push({ field: "rationale", message: `must be at most ${MAX_RATIONALE} characters` });
    else fields.rationale = req.rationale;
  }
  if (violations.length) throw invalidFields(violations);
  return fields;
}

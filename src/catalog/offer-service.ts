import { create } from "@bufbuild/protobuf";
import {
  CreativeSchema,
  OfferSchema,
  OfferWriteSchema,
  ListOffersResponseSchema,
  DeleteResponseSchema,
  type CatalogIdRequest,
  type CatalogListRequest,
  type DeleteResponse,
  type ListOffersResponse,
  type Offer,
  type OfferWithRelations,
  type OfferWrite,
  type RestoreRequest,
} from "../../gen/decisioning/v1/catalog_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { badRequest, forbidden, invalidField, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { CatalogRow, CatalogStore } from "./catalog-store.js";
import { snapshot, toOffer, toOfferWithRelations } from "./catalog-mapper.js";
import { OFFER_PATCH_RULES, OFFER_RULES } from "./catalog-rules.js";
import { columnsFromWrite, type ColumnValues } from "./write-fields.js";
import { configViolations, listFilters, mapConflict, referenceViolations, throwIfInvalid } from "./catalog-support.js";
import type { OfferEvent, OfferEventListener } from "./offer-events.js";
import { validateOfferBudget, validateOfferSchedule } from "../core/index.js";
import { offerEligibility } from "../core/offer-eligibility.js";

/**
 * What Recommend reads from an offer must have the core's shapes. The spec leaves `eligibility`,
 * `schedule` and `budget` open: an eligibility is read exactly as the snapshot compiler reads it
 * (offerEligibility), so a malformed condition is a 400 here rather than an offer left out of every
 * decision; one in no spelling the engine knows is stored as given (docs/decisioning.md).
 */
export function offerShapeProblems(values: ColumnValues): string[] {
  const given = (v: unknown) => v !== undefined && Object.keys(v as object).length > 0;
  return [
    ...offerEligibility(values.eligibility).problems,
    ...(given(values.schedule) ? validateOfferSchedule(values.schedule) : []),
    ...(given(values.budget) ? validateOfferBudget(values.budget) : []),
  ];
}

/** Who may approve a mandatory offer: an active admin of the same tenant (a narrow identity read). */
export type AdminCheck = (tenantId: string, userId: string) => Promise<boolean>;

const offerSnapshot = (row: CatalogRow) => snapshot(OfferSchema, row);

/** The fields a mandatory offer must have (spec 2.4): column and JSON name. */
const MANDATORY_FIELDS = [
  ["mandatory_reason", "mandatoryReason"],
  ["mandatory_expires_at", "mandatoryExpiresAt"],
  ["mandatory_approved_by", "mandatoryApprovedBy"],
] as const;

/** Offers (spec 2.4, 3.1, 3.7, 4.3): versions, the mandatory rules, cascades, audit and flow events. */
export class OfferService {
  constructor(
    private readonly store: CatalogStore,
    private readonly audit: AuditLog,
    private readonly isTenantAdmin: AdminCheck,
    private readonly listeners: OfferEventListener[] = [],
  ) {}

  async listOffers(ctx: TenantContext, req: CatalogListRequest): Promise<ListOffersResponse> {
    const page = cursorPageRequest(req);
    const { filter, nameContains } = listFilters(req, OFFER_RULES);
    const { rows, pagination } = cursorPage(await this.store.page("offers", ctx.tenantId, page, req.includeDeleted, filter, nameContains), page.limit);
    return create(ListOffersResponseSchema, {
      data: await this.withRelations(ctx.tenantId, rows, req.includeDeleted),
      pagination,
    });
  }

  async getOffer(ctx: TenantContext, req: CatalogIdRequest): Promise<Offer> {
    return toOffer(await this.mustFind(ctx.tenantId, req.id));
  }

  createOffer(ctx: TenantContext, req: OfferWrite): Promise<OfferWithRelations> {
    return this.createWithin(ctx, req);
  }

  /**
   * The writes behind createOffer, updateOffer and deleteOffer, joining `outer` when given: the
   * transaction of an approval applying its payload (CatalogStore.transaction). Separate methods,
   * because the doors call every method of this class with a third argument of their own.
   */
  async createWithin(ctx: TenantContext, req: OfferWrite, outer?: Transaction): Promise<OfferWithRelations> {
    const { values, violations } = columnsFromWrite(OfferWriteSchema, req, OFFER_RULES, "create");
    await this.validate(ctx, values, violations, null);
    const row = await this.store.transaction(ctx.tenantId, async (t) => {
      const created = await mapConflict(
        this.store.insert(t, "offers", ctx.tenantId, { id: newId(), ...values }),
        `name: an offer named "${values.name}" already exists`,
      );
      await this.audit.record(t, ctx, {
        action: "create",
        entityType: "offer",
        entityId: created.id,
        entityName: created.name,
        before: null,
        after: offerSnapshot(created),
        entityVersion: created.version,
      });
      await this.recordMandatory(t, ctx, values, null, created);
      await this.emit(t, ctx, { kind: "created", offerId: created.id, status: String(created.status) });
      return created;
    }, outer);
    return (await this.withRelations(ctx.tenantId, [row], false))[0];
  }

  /** PUT /offers: any create field, version incremented, guards identical to create. */
  updateOffer(ctx: TenantContext, req: OfferWrite): Promise<OfferWithRelations> {
    return this.updateWithin(ctx, req);
  }

  async updateWithin(ctx: TenantContext, req: OfferWrite, outer?: Transaction): Promise<OfferWithRelations> {
    if (!req.id) throw invalidField("id", "is required");
    const { values, violations } = columnsFromWrite(OfferWriteSchema, req, OFFER_RULES, "update");
    const row = await this.change(ctx, req.id, values, violations, true, outer);
    return (await this.withRelations(ctx.tenantId, [row], false))[0];
  }

  /** PUT /offers/{id}: only the accepted fields (others ignored), version unchanged. */
  async patchOffer(ctx: TenantContext, req: OfferWrite): Promise<Offer> {
    const { values, violations } = columnsFromWrite(OfferWriteSchema, req, OFFER_PATCH_RULES, "update");
    return toOffer(await this.change(ctx, req.id, values, violations, false));
  }

  /** DELETE /offers?id=: cascading soft delete with version increments and an audit entry per entity. */
  deleteOffer(ctx: TenantContext, req: CatalogIdRequest): Promise<DeleteResponse> {
    return this.deleteWithin(ctx, req);
  }

  async deleteWithin(ctx: TenantContext, req: CatalogIdRequest, outer?: Transaction): Promise<DeleteResponse> {
    if (!req.id) throw invalidField("id", "is required");
    const { id, cascaded } = await this.store.transaction(ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      const after = await this.store.update(t, "offers", ctx.tenantId, before.id, { deleted_at: new Date() }, true);
      await this.recordChange(t, ctx, "soft_delete", before, after);
      const creatives = await this.store.cascadeDeleteCreatives(t, ctx.tenantId, before.id);
      for (const c of creatives) {
        await this.audit.record(t, ctx, {
          action: "soft_delete",
          entityType: "creative",
          entityId: c.after.id,
          entityName: c.after.name,
          before: snapshot(CreativeSchema, c.before),
          after: snapshot(CreativeSchema, c.after),
          entityVersion: c.after.version,
          changes: { reason: `cascade from offer ${before.id}`, offerId: before.id },
        });
      }
      await this.emit(t, ctx, { kind: "deleted", offerId: before.id, status: String(before.status) });
      return { id: before.id, cascaded: creatives.length };
    }, outer);
    // The caller may name the offer; the answer says which offer that was.
    return create(DeleteResponseSchema, { success: true, id, cascaded });
  }

  /** DELETE /offers/{id}: soft delete without cascade or version increment. */
  async removeOffer(ctx: TenantContext, req: CatalogIdRequest): Promise<DeleteResponse> {
    const id = await this.store.transaction(ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      const after = await this.store.update(t, "offers", ctx.tenantId, before.id, { deleted_at: new Date() }, false);
      await this.recordChange(t, ctx, "soft_delete", before, after);
      await this.emit(t, ctx, { kind: "deleted", offerId: before.id, status: String(before.status) });
      return before.id;
    });
    return create(DeleteResponseSchema, { success: true, id, cascaded: 0 });
  }

  /** POST /restore?entityType=offer&id=: the offer comes back; its creatives stay deleted (spec 3.7). */
  async restoreEntity(ctx: TenantContext, req: RestoreRequest): Promise<Offer> {
    const violations: FieldViolation[] = [];
    if (req.entityType !== "offer") violations.push({ field: "entityType", message: "must be offer" });
    if (!req.id) violations.push({ field: "id", message: "is required" });
    throwIfInvalid(violations);
    const row = await this.store.transaction(ctx.tenantId, async (t) => {
      const before = isUuid(req.id) ? await this.store.find("offers", ctx.tenantId, { id: req.id }, { includeDeleted: true, t }) : null;
      if (!before) throw notFound("offer", req.id);
      if (!before.deleted_at) throw badRequest("NOT_DELETED", `id: offer ${req.id} is not deleted`);
      const after = await mapConflict(
        this.store.update(t, "offers", ctx.tenantId, before.id, { deleted_at: null }, false),
        `name: another offer named "${before.name}" exists; rename it before restoring this one`,
      );
      await this.recordChange(t, ctx, "restore", before, after);
      await this.emit(t, ctx, { kind: "restored", offerId: after.id, status: String(after.status) });
      return after;
    });
    return toOffer(row);
  }

  // ---- internals ---------------------------------------------------------------------------

  private async change(
    ctx: TenantContext,
    idOrName: string,
    values: ColumnValues,
    violations: FieldViolation[],
    bumpVersion: boolean,
    outer?: Transaction,
  ): Promise<CatalogRow> {
    return this.store.transaction(ctx.tenantId, async (t) => {
      // Not-found before body errors: nothing is learnt about an offer that is not the caller's.
      const before = await this.mustFind(ctx.tenantId, idOrName, t);
      await this.validate(ctx, values, violations, before);
      const after = await mapConflict(
        this.store.update(t, "offers", ctx.tenantId, before.id, values, bumpVersion),
        `name: an offer named "${values.name}" already exists`,
      );
      await this.recordChange(t, ctx, "update", before, after);
      await this.recordMandatory(t, ctx, values, before, after);
      if (before.status !== after.status) {
        await this.emit(t, ctx, { kind: "status_changed", offerId: after.id, status: String(after.status) });
      }
      return after;
    }, outer);
  }

  /** Category references, then the mandatory rules of spec 2.4 (403 before 400 for non-admins). */
  private async validate(ctx: TenantContext, values: ColumnValues, violations: FieldViolation[], current: CatalogRow | null): Promise<void> {
    violations.push(
      ...(await referenceViolations(this.store, ctx.tenantId, [
        { field: "categoryId", kind: "category", id: values.category_id },
        { field: "subCategoryId", kind: "sub_category", id: values.sub_category_id },
      ])),
      ...configViolations(offerShapeProblems(values)),
    );
    // Spec 2.4 and 4.3: the rules hold for the offer as it will be after this write, the stored row
    // merged with the request, so clearing a required field of an offer that stays mandatory is a 400.
    const after = (column: string) => (column in values ? values[column] : current?.[column]);
    const setting = values.mandatory === true;
    if (setting && ctx.role !== "admin") throw forbidden("Only admins may make an offer mandatory", "MANDATORY_REQUIRES_ADMIN");
    // A write that leaves mandatory and its fields alone changes nothing these rules protect.
    const touched = setting || MANDATORY_FIELDS.some(([column]) => column in values);
    if (touched && after("mandatory") === true) {
      for (const [column, field] of MANDATORY_FIELDS) {
        if (!after(column)) violations.push({ field, message: "is required when mandatory is true" });
      }
    }
    // Values given are checked; setting mandatory checks the stored ones it keeps too (an expiry may have passed).
    const value = (column: string) => (setting ? after(column) : values[column]);
    const expires = value("mandatory_expires_at") as Date | null | undefined;
    if (expires && expires.getTime() <= Date.now()) violations.push({ field: "mandatoryExpiresAt", message: "must be in the future" });
    const approver = value("mandatory_approved_by") as string | null | undefined;
    if (approver && !(isUuid(approver) && (await this.isTenantAdmin(ctx.tenantId, approver)))) {
      violations.push({ field: "mandatoryApprovedBy", message: "must be an admin user of this tenant" });
    }
    throwIfInvalid(violations);
  }

  private async mustFind(tenantId: string, idOrName: string, t?: Transaction): Promise<CatalogRow> {
    if (!idOrName) throw notFound("offer", idOrName);
    const row = isUuid(idOrName)
      ? await this.store.find("offers", tenantId, { id: idOrName }, { t })
      : await this.store.find("offers", tenantId, { name: idOrName }, { t });
    if (!row) throw notFound("offer", idOrName);
    return row;
  }

  private recordChange(t: Transaction, ctx: TenantContext, action: "update" | "soft_delete" | "restore", before: CatalogRow, after: CatalogRow) {
    return this.audit.record(t, ctx, {
      action,
      entityType: "offer",
      entityId: after.id,
      entityName: after.name,
      before: offerSnapshot(before),
      after: offerSnapshot(after),
      entityVersion: after.version,
    });
  }

  /** Setting mandatory true writes a mandatory_override entry beside the create or update. */
  private async recordMandatory(t: Transaction, ctx: TenantContext, values: ColumnValues, before: CatalogRow | null, after: CatalogRow) {
    if (values.mandatory !== true) return;
    await this.audit.record(t, ctx, {
      action: "mandatory_override",
      entityType: "offer",
      entityId: after.id,
      entityName: after.name,
      before: before ? offerSnapshot(before) : null,
      after: offerSnapshot(after),
      entityVersion: after.version,
      changes: {
        reason: after.mandatory_reason,
        expiresAt: (after.mandatory_expires_at as Date).toISOString(),
        approvedBy: after.mandatory_approved_by,
      },
    });
  }

  private async emit(t: Transaction, ctx: TenantContext, event: OfferEvent): Promise<void> {
    for (const listener of this.listeners) await listener(t, ctx, event);
  }

  private async withRelations(tenantId: string, rows: CatalogRow[], includeDeleted: boolean): Promise<OfferWithRelations[]> {
    const creatives = await this.store.creativesOfOffers(tenantId, rows.map((r) => r.id), includeDeleted);
    const refIds = [...new Set(rows.flatMap((r) => [r.category_id, r.sub_category_id]).filter((id): id is string => typeof id === "string"))];
    const refs = new Map((await this.store.entriesByIds(tenantId, refIds)).map((e) => [e.id, e]));
    return rows.map((r) => toOfferWithRelations(r, creatives.filter((c) => c.offer_id === r.id), refs));
  }
}


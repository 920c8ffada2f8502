import { create, type JsonObject } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import type { Sequelize } from "sequelize";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { invalidField, invalidFields, isAppError, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { readJson } from "../transport/message-codec.js";
import { CATALOG_WRITE_TYPES, type CatalogWriteType, type WriteTarget } from "../catalog/write-targets.js";
import { PromoteAlgorithmModelRequestSchema } from "../../gen/decisioning/v1/models_pb.js";
import type { RegistryMoveInTransaction } from "../models/model-promotion.js";
import type { RecommendationStore } from "./recommendation-store.js";

/** Every entity type an approval can apply (spec 2.18). */
export const APPROVAL_ENTITY_TYPES = [...CATALOG_WRITE_TYPES, "ai_recommendation"] as const;
export type ApprovalEntityType = (typeof APPROVAL_ENTITY_TYPES)[number];
/** Whether the executor can apply an approval of this entity type (others are refused at approval). */
export function isApplicableEntityType(entityType: string): entityType is ApprovalEntityType {
  return (APPROVAL_ENTITY_TYPES as readonly string[]).includes(entityType);
}
export const APPROVAL_ACTIONS = ["create", "update", "delete", "publish"] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/** A change to one entity, as an approval stores it and as an AI recommendation proposes it. */
export interface Change {
  entityType: ApprovalEntityType;
  action: ApprovalAction;
  entityId: string | null;
  payload: Record<string, unknown>;
}

/** Body keys that are route parameters or the mask itself, never fields a payload may set. */
const NOT_PAYLOAD = new Set(["id", "collection", "update_mask"]);

/** Thrown to roll a dry run back once its writes have been validated. */
const DRY_RUN = Symbol("dry run");

/**
 * Applies a change through the target's own service methods inside the caller's transaction
 * (write-targets.ts), so that an approved change validates, audits and versions exactly like the
 * direct write it stands for. An AI recommendation is applied by re-reading the live record and
 * applying its patch as an update; one already applied is left alone.
 */
export class ChangeExecutor {
  constructor(
    private readonly db: Sequelize,
    private readonly targets: Record<CatalogWriteType, WriteTarget>,
    private readonly recommendations: RecommendationStore,
    /** Which of `ids` name live decision flows of the tenant (the publish target). */
    private readonly liveFlows: (tenantId: string, ids: string[]) => Promise<Set<string>>,
    /** The model registry's promote, inside the approval's transaction: an `algorithmModel` publish. */
    private readonly registryMove: RegistryMoveInTransaction,
  ) {}

  /** Returns the id of the entity changed (the new one for a create). */
  async apply(ctx: TenantContext, t: Transaction, change: Change): Promise<string | null> {
    if (change.entityType === "ai_recommendation") return this.applyRecommendation(ctx, t, change.entityId!);
    if (change.action === "publish" && change.entityType === "algorithmModel") {
      // A registry move: the promote route's body, applied by the route's own code.
      const req = readJson(PromoteAlgorithmModelRequestSchema, change.payload as JsonObject);
      req.id = change.entityId!;
      await this.registryMove(ctx, req, t);
      return change.entityId;
    }
    if (change.action === "publish") {
      // A flow's publish approval authorizes one later publish or rollback and changes nothing itself (spec 3.5).
      const live = await this.liveFlows(ctx.tenantId, [change.entityId!]);
      if (!live.has(change.entityId!)) throw notFound("decision flow", change.entityId!);
      return change.entityId;
    }
    const target = this.targets[change.entityType];
    switch (change.action) {
      case "create":
        return (await target.create(ctx, decodePayload(target, change.payload), t)).id;
      case "update": {
        const req = decodePayload(target, change.payload) as ReturnType<typeof decodePayload> & { id: string };
        req.id = change.entityId!;
        return (await target.update(ctx, req, t)).id;
      }
      case "delete":
        await target.delete(ctx, change.entityId!, t);
        return change.entityId;
    }
  }

  /**
   * Runs the change in a transaction that is always rolled back: the target's whole validation
   * (fields, references, uniqueness, existence) without a trace, as an approval's create needs.
   * Field errors are named under `at`, where the change sits in the caller's body.
   */
  async check(ctx: TenantContext, change: Change, at = "payload"): Promise<void> {
    try {
      await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
        await this.apply(ctx, t, change);
        throw DRY_RUN;
      });
    } catch (err) {
      if (err === DRY_RUN) return;
      // The entity a body names is a reference: missing, or another tenant's, is a 400 (spec 7).
      if (isAppError(err) && err.code === "NOT_FOUND") throw invalidField("entityId", err.message);
      throw underField(err, at);
    }
  }

  /** Applies the live record's patch unless it is applied already; marks it applied. */
  async applyRecommendation(ctx: TenantContext, t: Transaction, id: string): Promise<string> {
    const rec = isUuid(id) ? await this.recommendations.find(ctx.tenantId, id, t) : null;
    if (!rec) throw notFound("ai recommendation", id);
    if (rec.status === "applied") return rec.entity_id;
    await this.apply(ctx, t, { entityType: rec.entity_type as CatalogWriteType, action: "update", entityId: rec.entity_id, payload: rec.patch });
    await this.recommendations.update(t, ctx.tenantId, rec.id, { status: "applied", applied_at: new Date() });
    return rec.entity_id;
  }
}

/**
 * A JSON payload as the target's write message, decoded as the REST door decodes a body: the keys
 * given form the update mask (null clears a field, absent keys stay). Field errors name
 * `payload.<field>`.
 */
function decodePayload(target: WriteTarget, payload: Record<string, unknown>) {
  const message = readJson(target.writeSchema, payload as JsonObject);
  const maskField = target.writeSchema.fields.find((f) => f.name === "update_mask");
  if (maskField) {
    const paths = Object.keys(payload)
      .map((k) => target.writeSchema.fields.find((f) => f.jsonName === k || f.name === k))
      .filter((f) => f !== undefined && !NOT_PAYLOAD.has(f.name))
      .map((f) => f!.name);
    (message as Record<string, unknown>)[maskField.localName] = create(FieldMaskSchema, { paths });
  }
  return message;
}

/** A target's field violations, renamed to where they sit in the caller's body (`payload`, a recommendation's `patch`). */
function underField(err: unknown, at: string): unknown {
  if (!isAppError(err) || err.reason !== "VALIDATION_FAILED") return err;
  const fields = (err.details.fields as FieldViolation[] | undefined) ?? [];
  return invalidFields(fields.map((f) => ({ field: `${at}.${f.field}`, message: f.message })));
}

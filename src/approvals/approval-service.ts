import { create } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import {
  ListApprovalsResponseSchema,
  type ApprovalRequest,
  type CreateApprovalRequest,
  type GetApprovalRequest,
  type ListApprovalsRequest,
  type ListApprovalsResponse,
  type ResolveApprovalRequest,
} from "../../gen/decisioning/v1/approvals_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { AppError, forbidden, invalidFields, isAppError, notFound, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { cursorPage, cursorPageRequest } from "../platform/pagination.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { AuditLog } from "../audit/audit-log.js";
import { decideStage, initialStages, type StageRole } from "../core/approval-stages.js";
import { approvalSnapshot, toApproval } from "./approval-mapper.js";
import type { ApprovalRow, ApprovalStatus, ApprovalStore } from "./approval-store.js";
import {
  APPROVAL_ACTIONS,
  APPROVAL_ENTITY_TYPES,
  isApplicableEntityType,
  type ApprovalAction,
  type Change,
  type ChangeExecutor,
} from "./change-executor.js";
import { actorId } from "./actor.js";

const STATUSES: readonly ApprovalStatus[] = ["pending", "approved", "rejected", "expired"];
const STAGE_ROLES: readonly StageRole[] = ["editor", "admin"];
const MAX_STAGES = 10;
const MAX_COMMENT = 2000;
const MAX_ENTITY_TYPE = 100;
/** An approval's request as stored: any entity type, applicable or not. */
type RequestedChange = Omit<Change, "entityType"> & { entityType: string };

/** 409s of this domain: the request cannot move, or its payload no longer applies. */
function conflict409(reason: string, message: string): AppError {
  return new AppError({ code: "FAILED_PRECONDITION", reason, message });
}

export interface ApprovalServiceOptions {
  db: Sequelize;
  store: ApprovalStore;
  executor: ChangeExecutor;
  audit: AuditLog;
  /** APPROVAL_MAX_AGE_HOURS in milliseconds: older pending requests are expired (spec 3.5). */
  maxAgeMs: number;
  /** The tenant setting requirePublishApproval, read in the publish's transaction. */
  requiresPublishApproval(tenantId: string, t: Transaction): Promise<boolean>;
}

/**
 * Approval requests (spec 2.18, 3.5, 4.10; docs/approvals.md). Every write takes the tenant's write
 * lock first and then the request's row lock (the one lock order), so two approvers of the last
 * stage are serialized: the first applies the payload, the second finds the request resolved.
 */
export class ApprovalService {
  constructor(private readonly o: ApprovalServiceOptions) {}

  async listApprovals(ctx: TenantContext, req: ListApprovalsRequest): Promise<ListApprovalsResponse> {
    if (req.status !== undefined && !STATUSES.includes(req.status as ApprovalStatus)) {
      throw invalidFields([{ field: "status", message: `must be one of ${STATUSES.join(", ")}` }]);
    }
    const page = cursorPageRequest(req);
    const rows = await this.o.store.page(ctx.tenantId, page, (req.status as ApprovalStatus | undefined) ?? null);
    const result = cursorPage(rows, page.limit);
    return create(ListApprovalsResponseSchema, { data: result.rows.map(toApproval), pagination: result.pagination });
  }

  async getApproval(ctx: TenantContext, req: GetApprovalRequest): Promise<ApprovalRequest> {
    return toApproval(await this.mustFind(ctx.tenantId, req.id));
  }

  /** Checks the payload by the target's own validation (a rolled-back dry run) before storing it. */
  async createApproval(ctx: TenantContext, req: CreateApprovalRequest): Promise<ApprovalRequest> {
    const { change, roles } = parseCreate(req);
    // A type the executor cannot apply is stored as asked and refused at its final approval (spec 3.5, 7).
    if (isApplicableEntityType(change.entityType)) await this.o.executor.check(ctx, change as Change);
    const row = await tenantWriteTransaction(this.o.db, ctx.tenantId, async (t) => {
      const stored = await this.o.store.insert(t, ctx.tenantId, {
        id: newId(),
        entity_type: change.entityType,
        entity_id: change.entityId,
        action: change.action,
        payload: change.payload,
        stages: initialStages(roles),
        comment: req.comment,
        requested_by: actorId(ctx),
        requested_by_name: ctx.actorName,
      });
      await this.record(t, ctx, "create", null, stored);
      return stored;
    });
    return toApproval(row);
  }

  async resolveApproval(ctx: TenantContext, req: ResolveApprovalRequest): Promise<ApprovalRequest> {
    const violations: FieldViolation[] = [];
    if (req.decision !== "approve" && req.decision !== "reject") violations.push({ field: "decision", message: "must be approve or reject" });
    if (req.comment.length > MAX_COMMENT) violations.push({ field: "comment", message: `must be at most ${MAX_COMMENT} characters` });
    if (!isUuid(req.id)) throw notFound("approval request", req.id);
    if (violations.length) throw invalidFields(violations);
    const decision = req.decision as "approve" | "reject";
    // The catalog writes the payload goes through report their own committed change (CatalogStore).
    const row = await tenantWriteTransaction(this.o.db, ctx.tenantId, async (t) => {
      const before = await this.mustFind(ctx.tenantId, req.id, t);
      if (before.status !== "pending") {
        // Approving an approved AI recommendation again changes nothing (spec 4.10).
        if (before.status === "approved" && before.entity_type === "ai_recommendation" && decision === "approve") return before;
        throw conflict409("APPROVAL_RESOLVED", `approval request ${before.id} is already ${before.status}`);
      }
      if (before.created_at.getTime() < Date.now() - this.o.maxAgeMs) {
        throw conflict409("APPROVAL_EXPIRED", `approval request ${before.id} is older than APPROVAL_MAX_AGE_HOURS and expires`);
      }
      const outcome = decideStage(before.stages, before.requested_by, { id: actorId(ctx), name: ctx.actorName, role: ctx.role }, decision, req.comment, new Date());
      if (!outcome.ok) throw forbidden(outcome.message, outcome.reason);
      let entityId = before.entity_id;
      if (outcome.status === "approved") entityId = await this.applyChange(ctx, t, before);
      const after = await this.o.store.update(t, ctx.tenantId, before.id, {
        stages: outcome.stages,
        status: outcome.status,
        entity_id: entityId,
        ...(outcome.status !== "pending" && { resolved_at: new Date() }),
      });
      const stage = before.stages.findIndex((s) => s.status === "pending") + 1;
      await this.record(t, ctx, decision, before, after, { stage, comment: req.comment });
      return after;
    });
    return toApproval(row);
  }

  /**
   * The publish gate of the decision flows (spec 3.5): with requirePublishApproval, a publish uses
   * up one approved publish approval of the flow, in the publish's own transaction.
   */
  readonly consumePublishApproval = async (t: Transaction, ctx: TenantContext, flowId: string): Promise<void> => {
    if (!(await this.o.requiresPublishApproval(ctx.tenantId, t))) return;
    const approval = await this.o.store.unusedPublishApproval(t, ctx.tenantId, flowId);
    if (!approval) {
      throw conflict409(
        "PUBLISH_APPROVAL_REQUIRED",
        `publishing or rolling back decision flow ${flowId} needs an approved publish approval (tenant setting requirePublishApproval); none is unused`,
      );
    }
    await this.o.store.update(t, ctx.tenantId, approval.id, { consumed_at: new Date() });
  };

  /** Expires stale pending requests of every tenant (the approvals-expire job). */
  async expireStale(now: Date): Promise<number> {
    return (await this.o.store.expireAcrossTenants(new Date(now.getTime() - this.o.maxAgeMs))).length;
  }

  /**
   * The final approval's write; a payload that no longer applies, or an entity type nothing can
   * apply, rolls everything back, 409 (spec 3.5, 7).
   */
  private async applyChange(ctx: TenantContext, t: Transaction, row: ApprovalRow): Promise<string | null> {
    if (!isApplicableEntityType(row.entity_type)) {
      // The reason of every change that cannot be applied (its 409 is in the transport's table).
      throw conflict409(
        "APPROVAL_NOT_APPLICABLE",
        `unsupported approval entity type "${row.entity_type}": only ${APPROVAL_ENTITY_TYPES.join(", ")} can be applied`,
      );
    }
    const change: Change = {
      entityType: row.entity_type,
      action: row.action,
      entityId: row.entity_id,
      payload: row.payload,
    };
    try {
      return await this.o.executor.apply(ctx, t, change);
    } catch (err) {
      if (isAppError(err) && err.code !== "UNAVAILABLE" && err.code !== "INTERNAL") {
        throw conflict409("APPROVAL_NOT_APPLICABLE", `the approved change no longer applies: ${err.message}`);
      }
      throw err;
    }
  }

  private async mustFind(tenantId: string, id: string, t?: Transaction): Promise<ApprovalRow> {
    const row = isUuid(id) ? await this.o.store.find(tenantId, id, t) : null;
    if (!row) throw notFound("approval request", id);
    return row;
  }

  private record(
    t: Transaction,
    ctx: TenantContext,
    action: "create" | "approve" | "reject",
    before: ApprovalRow | null,
    after: ApprovalRow,
    changes?: Record<string, unknown>,
  ) {
    return this.o.audit.record(t, ctx, {
      action,
      entityType: "approval_request",
      entityId: after.id,
      entityName: `${after.action} ${after.entity_type}`,
      before: before ? approvalSnapshot(before) : null,
      after: approvalSnapshot(after),
      entityVersion: null,
      changes,
    });
  }
}

/**
 * The create body as a change and its stages; every problem as a 400 naming its field. Any
 * non-empty entity type is accepted: one the executor cannot apply is a 409 at its final approval
 * (spec 3.5 and 7), so only the applicable types' rules are checked here.
 */
function parseCreate(req: CreateApprovalRequest): { change: RequestedChange; roles: StageRole[] } {
  const violations: FieldViolation[] = [];
  const entityType = req.entityType;
  const action = req.action as ApprovalAction;
  const applicable = isApplicableEntityType(entityType);
  if (!entityType.trim()) violations.push({ field: "entityType", message: "is required" });
  else if (entityType.length > MAX_ENTITY_TYPE) violations.push({ field: "entityType", message: `must be at most ${MAX_ENTITY_TYPE} characters` });
  if (!APPROVAL_ACTIONS.includes(action)) violations.push({ field: "action", message: `must be one of ${APPROVAL_ACTIONS.join(", ")}` });
  else if (applicable && action === "publish" && entityType !== "decisionFlow" && entityType !== "algorithmModel") {
    violations.push({ field: "action", message: "publish applies to decisionFlow (a publish or rollback) and algorithmModel (a registry move) only" });
  }
  else if (entityType === "ai_recommendation" && action !== "update") {
    violations.push({ field: "action", message: "must be update for an ai_recommendation (its patch is applied)" });
  }
  const entityId = req.entityId ?? null;
  if (action === "create" && entityId !== null) violations.push({ field: "entityId", message: "must be absent for a create" });
  if (action !== "create" && APPROVAL_ACTIONS.includes(action)) {
    if (entityId === null) violations.push({ field: "entityId", message: `is required for ${action}` });
    else if (!isUuid(entityId)) violations.push({ field: "entityId", message: "must be an id" });
  }
  // Spec 4.10: editors and admins decide; an admin also satisfies an editor stage.
  const roles = req.stages.length ? req.stages.map((s) => s.requiredRole as StageRole) : (["editor"] as StageRole[]);
  if (req.stages.length > MAX_STAGES) violations.push({ field: "stages", message: `must hold at most ${MAX_STAGES} stages` });
  roles.forEach((r, i) => {
    if (!STAGE_ROLES.includes(r)) violations.push({ field: `stages[${i}].requiredRole`, message: "must be editor or admin" });
  });
  if (req.comment.length > MAX_COMMENT) violations.push({ field: "comment", message: `must be at most ${MAX_COMMENT} characters` });
  if (violations.length) throw invalidFields(violations);
  return { change: { entityType, action, entityId, payload: req.payload ?? {} }, roles };
}

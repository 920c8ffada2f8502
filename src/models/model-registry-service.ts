import { create } from "@bufbuild/protobuf";
import {
  PromoteAlgorithmModelResponseSchema,
  type PromoteAlgorithmModelRequest,
  type PromoteAlgorithmModelResponse,
  type ResolveModelLifecycleRequest,
  type ResolveModelLifecycleResponse,
} from "../../gen/decisioning/v1/models_pb.js";
import {
  DEFAULT_MODEL_FAMILY,
  DEMOTED_CHAMPION_STATUS,
  FAMILY_STATUSES,
  REGISTRY_MOVES,
  REGISTRY_STATES,
  isLegalMove,
  isRegistryStatus,
  rollbackGuard,
  type FlowModelUse,
  type GuardTrip,
  type RegistryStatus,
} from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { AppError, forbidden, invalidField, isAppError, notFound } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { ModelPromoter, ModelPromotion } from "./model-promotion.js";
import { registrySnapshot, toLifecycle, toRegistryEntry } from "./model-registry-mapper.js";
import type { ModelRegistryStore, RegistryRow } from "./model-registry-store.js";

const MAX_FAMILY = 255;

export interface ModelRegistryDeps {
  store: ModelRegistryStore;
  audit: AuditLog;
  /** The catalog's read model: active flows and the models their score nodes name. */
  activeFlowModelUses(tenantId: string, t: Transaction): Promise<FlowModelUse[]>;
  /** The decisions' read model: a model's scored decisions, counted up to `atMost`. */
  countScoredDecisions(tenantId: string, modelId: string, atMost: number, t: Transaction): Promise<number>;
  /** Invalidates the tenant's decision snapshots in every process, once a move has committed. */
  configChanged(tenantId: string): void;
  /** A champion's successor needs this many scored decisions (MODEL_PROMOTION_MIN_DECISIONS). */
  minScoredDecisions: number;
}

interface MoveResult {
  model: RegistryRow;
  from: RegistryRow["registry_status"];
  demoted: RegistryRow | null;
  bypassed: GuardTrip[];
}

/**
 * The model registry (spec 3.3, 4.12; docs/models.md). Every move runs in one transaction under
 * the tenant's write lock: the legal-move table, the family rule, the rollback guard, the demotion
 * of the old champion and an audit entry per changed model, all or nothing. Experiments' automatic
 * promotion uses the same `promote`.
 */
export class ModelRegistryService implements ModelPromoter {
  constructor(private readonly deps: ModelRegistryDeps) {}

  async promote(ctx: TenantContext, modelId: string, promotion: ModelPromotion): Promise<void> {
    await this.move(ctx, modelId, promotion);
  }

  /**
   * `POST /algorithm-models/{id}/promote`; with `outer`, the same move inside a caller's
   * transaction (an approved `algorithmModel` publish request, docs/approvals.md).
   */
  async promoteAlgorithmModel(ctx: TenantContext, req: PromoteAlgorithmModelRequest, outer?: Transaction): Promise<PromoteAlgorithmModelResponse> {
    const result = await this.move(
      ctx,
      req.id,
      {
        // Checked by the move, which other domains call with whatever they hold.
        toStatus: req.toStatus.trim() as RegistryStatus,
        family: req.family,
        bypassRollbackGuard: req.bypassRollbackGuard,
        metricsSnapshot: req.metricsSnapshot,
      },
      outer,
    );
    return create(PromoteAlgorithmModelResponseSchema, {
      model: toRegistryEntry(result.model),
      fromStatus: result.from,
      demoted: result.demoted ? toRegistryEntry(result.demoted) : undefined,
      bypassedGuards: result.bypassed.map((trip) => trip.rule),
    });
  }

  async resolveModelLifecycle(ctx: TenantContext, req: ResolveModelLifecycleRequest): Promise<ResolveModelLifecycleResponse> {
    const family = req.family?.trim();
    return toLifecycle(await this.deps.store.lineup(ctx.tenantId, family ? family : null));
  }

  private async move(ctx: TenantContext, modelId: string, promotion: ModelPromotion, outer?: Transaction): Promise<MoveResult> {
    const { toStatus: to } = promotion;
    if (!to) throw invalidField("toStatus", `is required: one of ${REGISTRY_STATES.join(", ")}`);
    if (!isRegistryStatus(to)) throw invalidField("toStatus", `must be one of ${REGISTRY_STATES.join(", ")}, got "${to}"`);
    const familyGiven = promotion.family?.trim();
    if (familyGiven !== undefined && (!familyGiven || familyGiven.length > MAX_FAMILY)) {
      throw invalidField("family", `must be 1 to ${MAX_FAMILY} characters when given`);
    }
    // Refused whether or not the guard would trip, so that the same request always gets the same answer.
    if (promotion.bypassRollbackGuard && ctx.role !== "admin") throw forbidden("bypassRollbackGuard: only an admin may bypass the rollback guard");

    const { store } = this.deps;
    const tenantId = ctx.tenantId;
    const result = await store
      .transaction(tenantId, async (t) => {
        const model = isUuid(modelId) ? await store.model(t, tenantId, modelId) : null;
        if (!model) throw notFound("algorithm model", modelId);
        const from = model.registry_status;
        if (!isLegalMove(from, to)) {
          const allowed = REGISTRY_MOVES[from];
          throw invalidField("toStatus", `cannot move a ${from} model to ${to}; from ${from} it may move to ${allowed.join(", ")}`);
        }
        // Spec 4.12: family optional. A model that has none joins the tenant's default family when it takes part in one.
        const family = familyGiven || model.family || (FAMILY_STATUSES.includes(to) ? DEFAULT_MODEL_FAMILY : model.family);
        const incumbent = to === "champion" ? await store.champion(t, tenantId, family, model.id) : null;

        const trips = await this.guard(t, tenantId, model, to, family, incumbent);
        if (trips.length && !promotion.bypassRollbackGuard) {
          throw new AppError({
            code: "FAILED_PRECONDITION",
            reason: "ROLLBACK_GUARD",
            message: `Rollback guard: ${trips.map((trip) => trip.message).join("; ")}. An admin may send bypassRollbackGuard: true`,
            details: { rules: trips.map((trip) => trip.rule) },
          });
        }

        // The old champion steps down first, so that the one-champion index holds at every statement.
        const demoted = incumbent ? await store.move(t, tenantId, incumbent.id, DEMOTED_CHAMPION_STATUS, incumbent.family) : null;
        if (incumbent && demoted) {
          await this.record(t, ctx, incumbent, demoted, { reason: `replaced by champion ${model.key}` });
        }
        const moved = await store.move(t, tenantId, model.id, to, family);
        await this.record(t, ctx, model, moved, {
          metricsSnapshot: promotion.metricsSnapshot ?? null,
          ...(trips.length && { bypassedGuards: trips.map((trip) => trip.rule) }),
        });
        return { model: moved, from, demoted, bypassed: trips };
      }, outer)
      .catch((err) => {
        // The tenant's write lock serializes moves, so only a writer outside the registry gets here.
        if (!isAppError(err) && isUniqueViolation(err)) {
          throw new AppError({ code: "ALREADY_EXISTS", reason: "CONFLICT", message: "family: another champion of this family was written concurrently; retry" });
        }
        throw err;
      });
    if (outer) outer.afterCommit(() => this.deps.configChanged(tenantId));
    else this.deps.configChanged(tenantId);
    return result;
  }

  /** Gathers what the rollback guard reads (core/registry-moves.ts) and asks it. */
  private async guard(t: Transaction, tenantId: string, model: RegistryRow, to: ModelPromotion["toStatus"], family: string, incumbent: RegistryRow | null) {
    // Flows matter only when a champion steps down or a model is archived.
    const needsFlows = model.registry_status === "champion" || to === "archived";
    const flows = needsFlows ? await this.deps.activeFlowModelUses(tenantId, t) : [];
    const familyOfKey = flows.length ? await this.deps.store.familiesByKey(t, tenantId) : new Map<string, string>();
    const scoredDecisions = incumbent ? await this.deps.countScoredDecisions(tenantId, model.id, this.deps.minScoredDecisions, t) : 0;
    return rollbackGuard({
      model: { key: model.key, family: model.family, status: model.registry_status },
      to,
      family,
      incumbentChampion: incumbent,
      scoredDecisions,
      minScoredDecisions: this.deps.minScoredDecisions,
      flows,
      familyOfKey,
    });
  }

  /** One audit entry per changed model; `changes.registryMove` says which move it was. */
  private record(t: Transaction, ctx: TenantContext, before: RegistryRow, after: RegistryRow, extra: Record<string, unknown>) {
    return this.deps.audit.record(t, ctx, {
      action: "update",
      entityType: "algorithm_model",
      entityId: after.id,
      entityName: after.name,
      before: registrySnapshot(before),
      after: registrySnapshot(after),
      entityVersion: after.version,
      changes: { registryMove: { from: before.registry_status, to: after.registry_status }, ...extra },
    });
  }
}

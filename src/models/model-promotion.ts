/**
 * How other domains move a model through the registry (spec 3.3, 4.12): experiments' auto-promotion
 * promotes a winning challenger the same way `POST /api/v1/algorithm-models/{id}/promote` does, with
 * the same legal moves, one-champion rule, rollback guard and audit row.
 */
import type { PromoteAlgorithmModelRequest } from "../../gen/decisioning/v1/models_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";

export const REGISTRY_STATUSES = ["draft", "shadow", "challenger", "champion", "archived"] as const;
export type RegistryStatus = (typeof REGISTRY_STATUSES)[number];

export interface ModelPromotion {
  toStatus: RegistryStatus;
  /** Sets the model's family on this move; the one-champion rule is per family. */
  family?: string;
  /** Admins only: skip the rollback guard (docs/models.md). */
  bypassRollbackGuard?: boolean;
  /** Stored in the audit row of the move, e.g. the experiment results that justified it. */
  metricsSnapshot?: Record<string, unknown>;
}

export interface ModelPromoter {
  /** Applies one registry move in one transaction; throws AppError for an illegal move (400), a foreign or unknown model (404) or the rollback guard (409). */
  promote(ctx: TenantContext, modelId: string, promotion: ModelPromotion): Promise<void>;
}

/** The promote route as a call inside a caller's transaction: what an approved registry move runs. */
export type RegistryMoveInTransaction = (ctx: TenantContext, req: PromoteAlgorithmModelRequest, t: Transaction) => Promise<unknown>;

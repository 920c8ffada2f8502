import type { ModelPromoter } from "../models/model-promotion.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import { CHAMPION_VARIANT, promotionWinner, type VariantCounts } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import { toSplit } from "./experiment-mapper.js";
import type { ExperimentService } from "./experiment-service.js";
import type { ExperimentRow, ExperimentStore } from "./experiment-store.js";

/** Auto-promotion judges at the spec's confidence level (2.15: significant at p < 0.05). */
export const PROMOTION_CONFIDENCE_LEVEL = 0.95;
/** How often the scheduler evaluates: results move slowly, and promoteAfterDays is counted in days. */
export const AUTO_PROMOTION_INTERVAL_MS = 60 * 60 * 1000;

export interface PromotionOutcome {
  tenantId: string;
  experimentId: string;
  /** promoted; no_winner (nothing beats the champion enough, significantly); refused (the registry said no). */
  result: "promoted" | "no_winner" | "refused";
  modelId?: string;
  reason?: string;
}

export interface AutoPromotionDeps {
  store: ExperimentStore;
  service: ExperimentService;
  /** The model registry's promote (h-models' implementation of src/models/model-promotion.ts). */
  promoter: ModelPromoter;
  logger: Logger;
}

/**
 * Spec 3.4: with `autoPromote`, a challenger that beats the champion by `promoteThreshold`
 * (relative uplift over the champion's rate), significantly (pooled z-test, p < 0.05), once
 * `promoteAfterDays` have passed since the experiment first went active, becomes the champion: a
 * registry promote (its own transaction and audit row, with the figures as `metricsSnapshot`). The
 * experiment has then done its job and is archived with `promotedModelId` and `promotedAt`, in a
 * second transaction with its own audit row (docs/experiments.md).
 */
export class AutoPromotion {
  constructor(private readonly deps: AutoPromotionDeps) {}

  /** Evaluates every due experiment of every tenant at `now`; what tests call directly. */
  async runAcrossTenants(now: Date): Promise<PromotionOutcome[]> {
    const due = await this.deps.store.dueForPromotionAcrossTenants(now);
    const outcomes: PromotionOutcome[] = [];
    for (const row of due) {
      try {
        outcomes.push(await this.evaluate(row, now));
      } catch (err) {
        // One tenant's failure must not stop the others; the next run tries again.
        this.deps.logger.error({ err, tenantId: row.tenant_id, experimentId: row.id }, "experiment auto-promotion failed");
      }
    }
    return outcomes;
  }

  private async evaluate(row: ExperimentRow, now: Date): Promise<PromotionOutcome> {
    const at = { tenantId: row.tenant_id, experimentId: row.id };
    const counts = await this.deps.service.variantCounts(row.tenant_id, row);
    const winner = promotionWinner(toSplit(row), counts, row.promote_threshold, PROMOTION_CONFIDENCE_LEVEL);
    if (!winner) return { ...at, result: "no_winner" };
    const ctx = systemContext(row, now);
    try {
      await this.deps.promoter.promote(ctx, winner.modelId, {
        toStatus: "champion",
        metricsSnapshot: {
          source: "experiment_auto_promotion",
          experimentId: row.id,
          experimentKey: row.key,
          variant: winner.variant,
          replacedChampionModelId: row.champion_model_id,
          challenger: counted(counts.get(winner.variant)),
          champion: counted(counts.get(CHAMPION_VARIANT)),
          relativeUplift: winner.comparison.relativeUplift,
          absoluteUplift: winner.comparison.absoluteUplift,
          zScore: winner.comparison.zScore,
          pValue: winner.comparison.pValue,
          confidenceLevel: PROMOTION_CONFIDENCE_LEVEL,
          promoteThreshold: row.promote_threshold,
          evaluatedAt: now.toISOString(),
        },
      });
    } catch (err) {
      // A registry refusal (rollback guard, illegal move) is the registry's call, not a failure here.
      const reason = err instanceof Error ? err.message : String(err);
      this.deps.logger.warn({ ...at, modelId: winner.modelId, reason }, "experiment auto-promotion refused by the model registry");
      return { ...at, result: "refused", modelId: winner.modelId, reason };
    }
    await this.deps.service.write(ctx, async (t) => {
      const before = await this.deps.service.mustFind(row.tenant_id, row.id, t);
      if (before.status !== "active" || before.promoted_at) return;
      const after = await this.deps.store.update(t, row.tenant_id, row.id, { status: "archived", promoted_model_id: winner.modelId, promoted_at: now });
      await this.deps.service.record(t, ctx, "update", before, after);
    });
    this.deps.logger.info({ ...at, modelId: winner.modelId, variant: winner.variant }, "experiment challenger promoted to champion");
    return { ...at, result: "promoted", modelId: winner.modelId };
  }
}

/** The scheduler's job (src/scheduling/scheduled-job.ts): hourly, and with every `/api/cron/tick`. */
export function autoPromotionJob(autoPromotion: AutoPromotion): ScheduledJob {
  return {
    name: "experiments.auto-promote",
    schedule: { everyMs: AUTO_PROMOTION_INTERVAL_MS },
    route: "tick",
    run: async (slot) => void (await autoPromotion.runAcrossTenants(slot)),
  };
}

/** Who the audit rows name: the system acting for the tenant, as an admin would. */
function systemContext(row: ExperimentRow, now: Date): TenantContext {
  return {
    tenantId: row.tenant_id,
    userId: null,
    actorName: "system (experiment auto-promotion)",
    role: "admin",
    principal: { kind: "internal" },
    requestId: `auto-promote:${row.id}:${now.toISOString()}`,
  };
}

const counted = (c: VariantCounts | undefined) => ({ samples: c?.samples ?? 0, conversions: c?.conversions ?? 0 });

import type { RecommendRequest, RecommendResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { CompiledTenant } from "./snapshot-compiler.js";
import { readDecisionInput, scoreDecision, type DecisionReads } from "./decision-input.js";
import { toRecommendResponse } from "./decision-mapper.js";
import { ExperimentArms } from "./experiment-arms.js";
import type { Counters } from "./counters.js";
import type { ScoringPool } from "./recommend-service.js";

/**
 * Only reads: the types say so. No decision store, trace writer, reservation or decision counter
 * is reachable from a preview, so it can neither persist nor count anything.
 */
export interface PreviewDeps {
  snapshots: { get(tenantId: string): Promise<CompiledTenant> };
  customers: DecisionReads["customers"];
  counters: DecisionReads["counters"] & { assignments: Pick<Counters["assignments"], "peek"> };
  pool: ScoringPool | null;
  minTreeWalksForPool: number;
}

/**
 * A dry-run Recommend (the MCP endpoint's, docs/mcp.md): the same input resolution, the same core
 * and scoring as RecommendService, over the same snapshot and counters, and then nothing. No caps
 * or budgets are reserved, no decision is counted (so none against the quota), no recommendation,
 * impression or trace is stored, and the customer's experiment variant is read, not kept. Two
 * differences from a real decision follow: caps a concurrent decision is about to take are not
 * refused, and a context bucket not yet admitted is scored as if admitted.
 */
export class DecisionPreview {
  private readonly reads: DecisionReads;

  constructor(private readonly deps: PreviewDeps) {
    this.reads = {
      customers: deps.customers,
      counters: deps.counters,
      arms: ExperimentArms.peeking(deps.counters.assignments),
      bucketsOverCap: async () => [],
    };
  }

  /** The decision Recommend would make now, with its rejected offers (explain); `recommendationId` is empty: nothing was recorded. */
  async preview(ctx: TenantContext, req: RecommendRequest): Promise<RecommendResponse> {
    const compiled = await this.deps.snapshots.get(ctx.tenantId);
    const { input, experiment } = await readDecisionInput(this.reads, ctx, req, compiled);
    input.explain = true;
    const { decision } = await scoreDecision(ctx.tenantId, compiled.snapshot, input, this.deps.pool, this.deps.minTreeWalksForPool);
    return toRecommendResponse({
      recommendationId: "",
      interactionId: null,
      customerId: input.customerId,
      decision,
      offers: decision.offers,
      rejected: decision.rejectedOffers,
      explain: true,
      experiment,
      createdAt: new Date(),
      creativeContent: compiled.creativeContent,
    });
  }
}

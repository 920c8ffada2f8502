import {
  adaptiveCountKey,
  evidenceBucket,
  refill,
  scoredModelIds,
  type ScoreColumns,
  type Decision,
  type DecisionInput,
  type RankedOffer,
  type Rejection,
  type ScoreTask,
} from "../core/index.js";
import type { RecommendRequest, RecommendResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import type { TenantContext } from "../platform/context.js";
import { AppError } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import type { CustomerCache } from "./customer-cache.js";
import type { Logger } from "../platform/logger.js";
import { BucketAdmission } from "./bucket-admission.js";
import { ExperimentArms, type ExperimentArm } from "./experiment-arms.js";
import type { Counters } from "./counters.js";
import type { RecommendationWriter } from "./recommendation-writer.js";
import type { CompiledTenant } from "./snapshot-compiler.js";
import type { TraceWriter } from "./trace-writer.js";
import { singleSlot, toRecommendationWrite, toRecommendResponse, toTraceRow } from "./decision-mapper.js";
import { readDecisionInput, scoreDecision, type DecisionReads } from "./decision-input.js";
import { traceRecord } from "./trace-record.js";
import { activeTraceIds } from "../platform/tracing.js";


/**
 * Where scoring runs when a task is expensive enough (workers/scoring-worker.ts through Piscina).
 * It scores inline itself when no worker answers in time: it never fails a decision.
 */
export interface ScoringPool {
  score(tenantId: string, task: ScoreTask): Promise<ScoreColumns>;
}

/** Told about every decision made and stored (the metrics); must not block or throw. */
export interface DecisionObserver {
  decided(offerCount: number, degradedScoring: boolean): void;
}

export interface RecommendDeps {
  snapshots: { get(tenantId: string): Promise<CompiledTenant> };
  customers: Pick<CustomerCache, "known">;
  /** Everything but the wipe, which is the workspace reset's. */
  counters: Omit<Counters, "wipe">;
  /** Stores each decision's rows before it is answered (group commit). */
  recommendations: Pick<RecommendationWriter, "save" | "unsave">;
  traces: TraceWriter;
  pool: ScoringPool | null;
  /** Tree walks (trees × candidates) from which a task goes to the pool. */
  minTreeWalksForPool: number;
  /** Lifetime decisions per tenant; null for none (self-hosted default). */
  decisionQuota: number | null;
  logger: Logger;
  observer?: DecisionObserver;
  random?: () => number;
}

/** Caps and budgets taken for a decision, by offer id: what a failed decision gives back. */
type Held = Map<string, RankedOffer["reservations"]>;

/**
 * Recommend (spec 1, 4.4): resolves the request against the tenant's compiled snapshot, reads the
 * counters the decision needs, runs the core, reserves caps and budgets atomically in rank order
 * (one script per round, refilling from the fallbacks when a reservation is refused), counts the
 * decision and its impressions' trials (one script), stores the recommendation and its impressions,
 * and queues the trace.
 */
export class RecommendService {
  private readonly reads: DecisionReads;

  constructor(private readonly deps: RecommendDeps) {
    const buckets = new BucketAdmission(deps.counters.buckets, deps.logger);
    this.reads = {
      customers: deps.customers,
      counters: deps.counters,
      arms: ExperimentArms.keeping(deps.counters.assignments),
      bucketsOverCap: (ctx, snapshot, input) => buckets.bucketsOverCap(ctx, snapshot, input),
    };
  }

  /** `preferPool`: score in the worker pool whatever the task's size (batch decisions keep the main thread for commits). */
  async recommend(ctx: TenantContext, req: RecommendRequest, options: { preferPool?: boolean } = {}): Promise<RecommendResponse> {
    const compiled = await this.deps.snapshots.get(ctx.tenantId);
    const { snapshot, settings } = compiled;
    const { input, experiment } = await readDecisionInput(this.reads, ctx, req, compiled);
    const recommendationId = input.seed;
    // A sampled trace stores the inputs and is explained when read (trace-record.ts), so only a
    // caller's explain=true pays for explanations here.
    const sampled = settings.decision_trace_enabled && (this.deps.random ?? Math.random)() < settings.decision_trace_sample_rate;
    input.explain = req.explain;

    const { decision, task } = await scoreDecision(ctx.tenantId, snapshot, input, this.deps.pool, this.deps.minTreeWalksForPool, options.preferPool);
    const bucket = evidenceBucket(task.models[task.modelKey], { customer: task.customer, context: task.context }, task.bucketsOverCap);
    const { offers, refusals, interactionId, createdAt } = await this.commit(ctx, input, decision, bucket, scoredModelIds(task), experiment);
    this.deps.observer?.decided(offers.length, decision.degradedScoring);
    if (sampled) {
      const otelTraceId = activeTraceIds()?.traceId;
      this.deps.traces.enqueue(
        recommendationId,
        () => toTraceRow(ctx.tenantId, recommendationId, decision, traceRecord(input, offers, refusals, experiment, otelTraceId), createdAt),
        snapshot.config,
      );
    }
    return toRecommendResponse({
      recommendationId,
      interactionId,
      customerId: input.customerId,
      decision,
      offers,
      rejected: [...decision.rejectedOffers, ...refusals],
      explain: req.explain,
      experiment,
      createdAt,
      creativeContent: compiled.creativeContent,
    });
  }

  /**
   * Makes the decision count: reserves its caps and budgets, counts it with its impressions'
   * trials and stores the recommendation (id = the input's seed, with the models that scored it)
   * with its impression rows. From the first reservation until the rows are stored, any failure
   * gives back what was taken: a cap or budget unit held by a decision nobody received would be
   * lost until its window ends.
   *
   * With a decision quota the count decides whether the decision may exist, so it comes before
   * the write. Without one it can fail only when Redis does, so the count and the write overlap
   * (one wait instead of two on every Recommend), and a count that fails takes the rows back.
   */
  private async commit(
    ctx: TenantContext,
    input: DecisionInput,
    decision: Decision,
    bucket: string,
    scoredBy: string[],
    experiment: ExperimentArm | null,
  ) {
    const held: Held = new Map();
    let counted: string[] = [];
    try {
      const { offers, refusals } = await this.reserve(ctx.tenantId, decision, held);
      // Each returned offer is an impression: one more trial of its evidence, counted with the decision.
      const trialKeys = offers.map((o) => adaptiveCountKey(o.offerId, bucket));
      const interactionId = singleSlot(input) && offers.length ? newId() : null;
      const write = toRecommendationWrite({ tenantId: ctx.tenantId, input, decision, offers, refusals, bucket, scoredBy, experiment, interactionId });
      const save = () => this.deps.recommendations.save(write);
      if (!offers.length) return { offers, refusals, interactionId, createdAt: await save() };
      if (this.deps.decisionQuota !== null) {
        await this.countDecision(ctx.tenantId, trialKeys);
        counted = trialKeys;
        return { offers, refusals, interactionId, createdAt: await save() };
      }
      const [count, saved] = await Promise.allSettled([this.countDecision(ctx.tenantId, trialKeys), save()]);
      if (count.status === "fulfilled") counted = trialKeys;
      else if (saved.status === "fulfilled") await this.unsave(ctx, input.seed);
      if (count.status === "rejected") throw count.reason;
      if (saved.status === "rejected") throw saved.reason;
      return { offers, refusals, interactionId, createdAt: saved.value };
    } catch (err) {
      await this.giveBack(ctx, held, counted);
      throw err;
    }
  }

  /** Counts the decision and its trials; refused once the workspace's decision quota is spent. */
  private async countDecision(tenantId: string, trialKeys: string[]): Promise<void> {
    if ((await this.deps.counters.decisionCounter.countDecision(tenantId, this.deps.decisionQuota, trialKeys)) !== null) return;
    throw new AppError({
      code: "FAILED_PRECONDITION",
      reason: "DECISION_QUOTA_EXHAUSTED",
      message: `This workspace has used its ${this.deps.decisionQuota} lifetime decisions; reset the workspace or move to a self-hosted deployment`,
      details: { quota: this.deps.decisionQuota },
    });
  }

  /**
   * Takes back the rows of a decision whose count failed. Nobody has its ids yet, so nothing can
   * refer to them; a take-back that fails too is logged, and the rows stay as a decision nobody received.
   */
  private async unsave(ctx: TenantContext, recommendationId: string): Promise<void> {
    try {
      await this.deps.recommendations.unsave(ctx.tenantId, recommendationId);
    } catch (err) {
      this.deps.logger.error({ requestId: ctx.requestId, tenantId: ctx.tenantId, err, recommendationId }, "failed decision: its stored rows not taken back");
    }
  }

  /**
   * Gives back what a failed decision took: its caps and budgets and, when it was counted, the
   * decision and its trials. A give-back that fails too is logged (the caller gets the first
   * error): those units stay taken until their windows end, which an operator should know.
   * `trialKeys` are the counted decision's, empty when it was not counted.
   */
  private async giveBack(ctx: TenantContext, held: Held, trialKeys: string[]): Promise<void> {
    const { reservations, decisionCounter } = this.deps.counters;
    const taken = [...held.values()].flat();
    const [released, uncounted] = await Promise.allSettled([
      taken.length ? reservations.release(ctx.tenantId, taken) : undefined,
      trialKeys.length ? decisionCounter.uncountDecision(ctx.tenantId, trialKeys) : undefined,
    ]);
    const log = { requestId: ctx.requestId, tenantId: ctx.tenantId };
    if (released.status === "rejected") {
      this.deps.logger.error({ ...log, err: released.reason, reservations: taken.map((r) => r.key) }, "failed decision: caps and budgets not given back");
    }
    if (uncounted.status === "rejected") {
      this.deps.logger.error({ ...log, err: uncounted.reason, trialKeys }, "failed decision: its count and trials not taken back");
    }
  }

  /**
   * Takes each returned offer's caps and budgets atomically, in rank order. A refused offer (a
   * concurrent request took the last unit) is replaced from the fallbacks; offers above it keep
   * what they hold. Nothing is ever overshot, because the check and the increment are one script.
   */
  private async reserve(tenantId: string, decision: Decision, held: Held): Promise<{ offers: RankedOffer[]; refusals: Rejection[] }> {
    const refused = new Set<string>();
    const refusals: Rejection[] = [];
    let offers = decision.offers;
    for (;;) {
      const pending = offers.filter((o) => !held.has(o.offerId));
      const taken = await this.deps.counters.reservations.reserve(tenantId, pending.map((o) => o.reservations));
      pending.forEach((offer, i) => {
        if (taken[i]) return held.set(offer.offerId, offer.reservations);
        refused.add(offer.offerId);
        const stage = offer.reservations.some((r) => r.kind === "frequency_cap") ? "frequency_cap" : "contact_policy";
        refusals.push({ offerId: offer.offerId, offerName: offer.offerName, stage, reason: "limit reached by a concurrent decision" });
      });
      if (taken.every(Boolean)) break;
      offers = refill(decision, refused);
    }
    // An offer taken in a round whose refusals reshuffled the selection below it gives its units back.
    const kept = new Set(offers.map((o) => o.offerId));
    const dropped = [...held].filter(([id]) => !kept.has(id));
    if (dropped.length) {
      await this.deps.counters.reservations.release(tenantId, dropped.flatMap(([, reservations]) => reservations));
      for (const [id] of dropped) held.delete(id);
    }
    return { offers, refusals };
  }
}

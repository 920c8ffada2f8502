import {
  chooseScoringPath,
  completeDecision,
  counterPlan,
  evidenceKeys,
  mergeAttributes,
  prepareDecision,
  readsRecentOutcomes,
  scoreCandidates,
  type AdaptiveCount,
  type Decision,
  type DecisionInput,
  type DecisionSnapshot,
  type ScoreTask,
} from "../core/index.js";
import type { RecommendRequest } from "../../gen/decisioning/v1/decisions_pb.js";
import type { TenantContext } from "../platform/context.js";
import { invalidFields, type FieldViolation } from "../platform/errors.js";
import { newId } from "../platform/ids.js";
import type { CustomerCache } from "./customer-cache.js";
import type { Counters } from "./counters.js";
import type { ExperimentArm, ExperimentArms } from "./experiment-arms.js";
import type { ScoringPool } from "./recommend-service.js";
import type { CompiledTenant } from "./snapshot-compiler.js";
import { inSpan, traceStage } from "../platform/tracing.js";

export const MAX_OFFERS = 50;
export const MAX_PLACEMENTS = 20;
const MAX_CUSTOMER_ID = 255;

/**
 * What reading a decision's input may touch: reads only, but for the two steps a real Recommend
 * records (the customer's kept experiment variant, a context bucket's admission), which each
 * caller supplies: Recommend keeps them, a dry run only looks (decision-preview.ts).
 */
export interface DecisionReads {
  customers: Pick<CustomerCache, "known">;
  counters: {
    reservations: Pick<Counters["reservations"], "read">;
    evidence: Pick<Counters["evidence"], "readEvidence">;
    negatives: Pick<Counters["negatives"], "forCustomer">;
  };
  arms: Pick<ExperimentArms, "assign">;
  bucketsOverCap(ctx: TenantContext, snapshot: DecisionSnapshot, input: Omit<DecisionInput, "clv" | "seed">): Promise<string[]>;
}

/**
 * Request → core input: names resolved against the snapshot (400 naming the field), the
 * experiment's variant model set as the override (before anything reads the model), counters read.
 */
export async function readDecisionInput(
reads: DecisionReads,
ctx: TenantContext,
req: RecommendRequest,
compiled: CompiledTenant,
): Promise<{ input: DecisionInput; experiment: ExperimentArm | null }> {
  const violations: FieldViolation[] = [];
  const customerId = req.customerId.trim();
  if (!customerId) violations.push({ field: "customerId", message: "is required" });
  else if (customerId.length > MAX_CUSTOMER_ID) violations.push({ field: "customerId", message: `must be at most ${MAX_CUSTOMER_ID} characters` });
  if (req.limit !== undefined && (req.limit < 1 || req.limit > MAX_OFFERS)) violations.push({ field: "limit", message: `must be between 1 and ${MAX_OFFERS}` });
  if (req.placements.length > MAX_PLACEMENTS) violations.push({ field: "placements", message: `must name at most ${MAX_PLACEMENTS} placements` });
  const channel = req.channel ? compiled.channels.get(req.channel) : undefined;
  if (req.channel && !channel) violations.push({ field: "channel", message: `unknown channel ${req.channel}` });
  const placements = req.placements.map((p, i) => {
    const id = compiled.placements.get(p);
    if (!id) violations.push({ field: `placements[${i}]`, message: `unknown placement ${p}` });
    return id ?? p;
  });
  if (new Set(placements).size !== placements.length) violations.push({ field: "placements", message: "must not repeat a placement" });
  const flowId = req.flow ? compiled.flows.get(req.flow) : undefined;
  if (req.flow && !(flowId && compiled.snapshot.flowsById.has(flowId))) {
    violations.push({ field: "flow", message: `unknown or inactive decision flow ${req.flow}` });
  }
  if (violations.length) throw invalidFields(violations);

  // The variant needs only the customer id and the flow: its Redis round trip overlaps the attributes' read.
  const [known, experiment] = await Promise.all([
    reads.customers.known(ctx.tenantId, customerId),
    reads.arms.assign(ctx.tenantId, compiled, { customerId, flowId }),
  ]);
  const input: DecisionInput = {
    customerId,
    channel: channel ?? null,
    placements,
    flowId,
    now: new Date().toISOString(),
    customer: mergeAttributes<unknown>(known.attributes, req.attributes ?? {}),
    context: { ...req.context },
    count: req.limit,
    clv: known.clv,
    seed: newId(),
  };
  if (experiment) input.modelKey = experiment.modelKey;
  const bucketsOverCap = await reads.bucketsOverCap(ctx, compiled.snapshot, input);
  if (bucketsOverCap.length) input.bucketsOverCap = bucketsOverCap;
  const keys = evidenceKeys(compiled.snapshot, input);
  const plan = counterPlan(compiled.snapshot, input);
  const [counters, counts, recentOutcomes] = await Promise.all([
    reads.counters.reservations.read(ctx.tenantId, plan.keys),
    reads.counters.evidence.readEvidence(ctx.tenantId, keys).then(successesWithinTrials),
    readsRecentOutcomes(compiled.snapshot) ? reads.counters.negatives.forCustomer(ctx.tenantId, customerId) : [],
  ]);
  // Set on the input rather than spread into a copy: on Node 20's V8 a spread copy that gains
  // members takes a slow path and promotes what it allocates (docs/performance.md, eleventh session).
  input.counters = counters;
  input.counterChecks = plan.checks;
  input.evidence = { keys, counts };
  input.recentOutcomes = recentOutcomes;
  return { input, experiment };
}

/** The core's decision for an input, scored in the worker pool when the task is expensive enough. */
export async function scoreDecision(
  tenantId: string,
  snapshot: DecisionSnapshot,
  input: DecisionInput,
  pool: ScoringPool | null,
  minTreeWalksForPool: number,
  /** Score in the worker pool whatever the task's size (batch decisions keep the main thread for commits). */
  preferPool = false,
): Promise<{ decision: Decision; task: ScoreTask }> {
  const prepared = prepareDecision(snapshot, input, traceStage);
  const task = prepared.scoreTask;
  const path = pool && (preferPool || chooseScoringPath(task, minTreeWalksForPool) === "pool") ? "pool" : "inline";
  const scores = await inSpan("decision.scoring", () => (pool && path === "pool" ? pool.score(tenantId, task) : scoreCandidates(task)), {
    "decision.scoring.path": path,
    "decision.candidates": task.candidates.length,
  });
  return { decision: completeDecision(prepared, scores, traceStage), task };
}

/**
 * Evidence as consistent counts, 0 <= successes <= trials. Redis never holds more successes than
 * trials (evidence-store.ts), but a process's cached view can, for a moment: its own success lands
 * in memory at once while another process's trial for it arrives with the next refresh (and a
 * decision taken back just after a workspace reset can leave a trial count below zero). The core
 * rightly refuses such counts (the candidate would score a degraded 0.5), so they are read as the
 * nearest consistent ones instead.
 */
function successesWithinTrials(counts: Array<AdaptiveCount | null>): Array<AdaptiveCount | null> {
  for (let i = 0; i < counts.length; i++) {
    const count = counts[i];
    if (!count) continue;
    const { successes, trials } = count;
    if (successes >= 0 && successes <= trials) continue;
    // The array is this read's own (EvidenceStore.readEvidence), but the counts in it may be the
    // cache's: they are replaced, not changed.
    const atLeastNone = Math.max(trials, 0);
    counts[i] = { successes: Math.min(Math.max(successes, 0), atLeastNone), trials: atLeastNone };
  }
  return counts;
}

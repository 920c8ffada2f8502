import { createHash } from "node:crypto";
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import {
  scoreCandidates,
  type DecisionShapOutcome,
  type ModelConfig,
  type PooledScoreResult,
  type PooledScoreTask,
  type ScoreColumns,
  type ScoreTask,
  type ScoringOffer,
  unpackScores,
} from "../core/index.js";
import { DEFAULT_POOL_TIMEOUT_MS } from "../config.js";
import type { Logger } from "./logger.js";
import { objectNumbers } from "./object-numbers.js";
import { inSpan } from "./tracing.js";

export interface ScoringPoolOptions {
  /** Worker threads (SCORING_POOL_THREADS); default one per core but one. */
  threads?: number;
  /** A task not answered within this many ms is scored inline instead (SCORING_POOL_TIMEOUT_MS). */
  timeoutMs?: number;
}

/** The default thread count: the event loop keeps one core. */
export const defaultPoolThreads = () => Math.max(1, availableParallelism() - 1);
/** Tasks waiting per thread before further ones are scored inline: a queue longer than this only adds latency. */
const QUEUE_PER_THREAD = 16;

/** Configuration digests by configuration object: a snapshot's models are hashed once, not per task. */
const digests = new WeakMap<ModelConfig, string>();

/**
 * Offer numbers by snapshot view: a snapshot's offers are immutable views (src/core/decide.ts), so a
 * number names one version of one offer, and a new snapshot's views get new numbers.
 */
const offerRef = objectNumbers<ScoringOffer>();

/**
 * A model's version reference: tenant, model id and a digest of its configuration. A model update
 * compiles a new snapshot whose configuration has another digest, so no worker can score a
 * decision with the version before it (workers/scoring-worker.ts).
 */
export function modelVersionRef(tenantId: string, model: ModelConfig): string {
  let digest = digests.get(model);
  if (!digest) digests.set(model, (digest = createHash("sha256").update(JSON.stringify(model)).digest("base64url").slice(0, 22)));
  return `${tenantId}/${model.id}/${digest}`;
}

/**
 * The worker pool for expensive scoring (tree ensembles), one task per request. Workers load
 * workers/scoring-worker.ts, which imports only src/core; under tsx they inherit `--import tsx`.
 * Workers keep compiled models by version reference, so a task carries only what changes per
 * request: candidates, attributes, counts. A worker that dies, fails to start or does not answer
 * in time, or a pool whose queue is full, costs speed, not the decision: `score` then scores inline.
 */
export function createScoringPool(logger: Logger, options: ScoringPoolOptions = {}) {
  const threads = options.threads ?? defaultPoolThreads();
  const timeoutMs = options.timeoutMs ?? DEFAULT_POOL_TIMEOUT_MS;
  // Two entry points of one worker file: the default scores, `explainShap` explains.
  const pool = new Piscina<ScoreTask | PooledScoreTask, PooledScoreResult | DecisionShapOutcome>({
    filename: new URL("../../workers/scoring-worker.ts", import.meta.url).href,
    // No thread until a task needs one (the CLI never scores); once started a thread stays, since
    // its models are what make it worth calling (Piscina's default idle timeout is 0).
    minThreads: 0,
    maxThreads: threads,
    idleTimeout: Infinity,
  });
  // A worker that fails to start must not take the service down: the task fails, scoring falls back.
  pool.on("error", (err) => logger.error({ err }, "scoring worker failed"));
  let fallbacks = 0;
  /** Tasks sent and not answered (those past their deadline included, until their worker is done). */
  let pending = 0;
  const maxPending = threads * (QUEUE_PER_THREAD + 1);

  /**
   * One pool task with a deadline. A task past it is scored inline by the caller, and the worker
   * is left to finish it (its answer is dropped): ending a busy worker would cost a thread start,
   * far more than the task, on a machine that is already late. A dead worker rejects at once.
   */
  function runTimed(task: PooledScoreTask): Promise<PooledScoreResult> {
    pending++;
    const run = (pool.run(task) as Promise<PooledScoreResult>).finally(() => pending--);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no scoring worker answered within ${timeoutMs} ms`)), timeoutMs);
    });
    // The losing side of the race must not surface as an unhandled rejection.
    run.catch(() => undefined);
    return Promise.race([run, deadline]).finally(() => clearTimeout(timer));
  }

  async function score(tenantId: string, task: ScoreTask): Promise<ScoreColumns> {
    // A full queue: overload spills onto the event loop at once rather than into a longer queue.
    if (pending >= maxPending) {
      fallbacks++;
      return scoreCandidates(task);
    }
    const { models, candidates, ...rest } = task;
    const modelRefs: Record<string, string> = {};
    for (const key in models) modelRefs[key] = modelVersionRef(tenantId, models[key]);
    const candidateRefs = new Uint32Array(candidates.length);
    for (let i = 0; i < candidates.length; i++) candidateRefs[i] = offerRef(candidates[i]);
    // Object.assign, not a spread copy that gains members: Node 20's V8 takes a slow path for those.
    const slim: PooledScoreTask = Object.assign({}, rest, { modelRefs, candidateRefs });
    try {
      let result = await runTimed(slim);
      // A worker that has not seen these versions answers what it misses, and keeps what it is sent
      // from then on. The retry may reach another worker that misses other offers (one that
      // started but had no task yet), so what is sent grows, one round per thread at most.
      const offers: Record<number, ScoringOffer> = {};
      for (let round = 0; "missing" in result && round < threads; round++) {
        const missing = new Set(result.missing.offers);
        candidates.forEach((offer, i) => missing.has(candidateRefs[i]) && (offers[candidateRefs[i]] = offer));
        result = await runTimed(Object.assign({}, slim, { models, offers }));
      }
      if ("scores" in result) return unpackScores(result.scores);
      throw new Error("scoring worker still misses what it was sent");
    } catch (err) {
      if (fallbacks++ % 100 === 0) logger.warn({ err, fallbacksTotal: fallbacks }, "scoring pool full, failed or timed out: scored inline");
      return scoreCandidates(task);
    }
  }

  return {
    /** Scores a task in a worker, or inline when no worker answers in time; never rejects for the pool's sake. */
    // Spans from the queue to the answer: a worker thread has no trace context of its own.
    score: (tenantId: string, task: ScoreTask) => inSpan("scoring_pool.run", () => score(tenantId, task)),
    /** TreeSHAP of a task's model (an explanation can cost far more CPU than scoring). */
    explainShap: (task: ScoreTask) => inSpan("scoring_pool.explain_shap", () => pool.run(task, { name: "explainShap" }) as Promise<DecisionShapOutcome>),
    /** Tasks waiting for a thread, and threads running: what the metrics show. */
    queueSize: () => pool.queueSize,
    threads: () => pool.threads.length,
    /** Tasks scored inline because the pool failed or timed out, since start. */
    fallbacks: () => fallbacks,
    /** The running worker threads (tests end one to see the fallback). */
    workers: () => pool.threads,
    close: () => pool.destroy(),
  };
}

export type ScoringPool = ReturnType<typeof createScoringPool>;

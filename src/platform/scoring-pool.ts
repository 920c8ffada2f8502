import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { CandidateScore, DecisionShapOutcome, ScoreTask } from "../core/index.js";
import type { Logger } from "./logger.js";
import { inSpan } from "./tracing.js";

/**
 * The worker pool for expensive scoring (large tree ensembles), one task per request. Workers load
 * workers/scoring-worker.ts, which imports only src/core; under tsx they inherit `--import tsx`.
 */
export function createScoringPool(logger: Logger, threads = Math.max(1, availableParallelism() - 1)) {
  // Two entry points of one worker file: the default scores, `explainShap` explains.
  const pool = new Piscina<ScoreTask, CandidateScore[] | DecisionShapOutcome>({
    filename: new URL("../../workers/scoring-worker.ts", import.meta.url).href,
    // No thread until a task needs one: most tasks score inline, and the CLI never scores.
    minThreads: 0,
    maxThreads: threads,
  });
  // A worker that fails to start must not take the service down: the task fails, scoring falls back.
  pool.on("error", (err) => logger.error({ err }, "scoring worker failed"));
  return {
    // Spans from the queue to the answer: a worker thread has no trace context of its own.
    run: (task: ScoreTask) => inSpan("scoring_pool.run", () => pool.run(task) as Promise<CandidateScore[]>),
    /** TreeSHAP of a task's model (an explanation can cost far more CPU than scoring). */
    explainShap: (task: ScoreTask) => inSpan("scoring_pool.explain_shap", () => pool.run(task, { name: "explainShap" }) as Promise<DecisionShapOutcome>),
    /** Tasks waiting for a thread, and threads running: what the metrics show. */
    queueSize: () => pool.queueSize,
    threads: () => pool.threads.length,
    close: () => pool.destroy(),
  };
}

/**
 * Piscina worker entry: scores one task off the event loop. It imports only src/core, so a
 * worker scores exactly as the in-process path does. Under tsx the worker thread inherits the
 * parent's `--import tsx` (Piscina passes `execArgv` through), which is how this .ts file loads.
 *
 * A scoring task names its models and offers by reference; they are kept here across tasks
 * (src/core/scoring/pooled-task.ts). An explanation brings its whole ScoreTask.
 */
import {
  createWorkerScoringCache,
  explainScoreTask,
  scorePooledTask,
  type DecisionShapOutcome,
  type PooledScoreResult,
  type PooledScoreTask,
  type ScoreTask,
} from "../src/core/index.js";

/** This thread's models (compiled on first use) and offers. */
const cache = createWorkerScoringCache();

export default function scoreTask(task: PooledScoreTask): PooledScoreResult {
  return scorePooledTask(cache, task);
}

/** Exact SHAP values of a decision's scoring step (src/core/explain), run by name: `pool.run(task, { name: "explainShap" })`. */
export function explainShap(task: ScoreTask): DecisionShapOutcome {
  return explainScoreTask(task);
}

/**
 * Piscina worker entry: scores one ScoreTask off the event loop. It imports only src/core, so a
 * worker scores exactly as the in-process path does. Under tsx the worker thread inherits the
 * parent's `--import tsx` (Piscina passes `execArgv` through), which is how this .ts file loads.
 */
import { explainScoreTask, scoreCandidates, type CandidateScore, type DecisionShapOutcome, type ScoreTask } from "../src/core/index.js";

export default function scoreTask(task: ScoreTask): CandidateScore[] {
  return scoreCandidates(task);
}

/** Exact SHAP values of a decision's scoring step (src/core/explain), run by name: `pool.run(task, { name: "explainShap" })`. */
export function explainShap(task: ScoreTask): DecisionShapOutcome {
  return explainScoreTask(task);
}

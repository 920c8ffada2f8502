/**
 * Where a scoring task runs. Posting a task to a worker thread costs a thread hop and the clone of
 * what changes per request (about 0.1 ms of the event loop's time, pooled-task.ts), which only
 * pays off when scoring itself is expensive. Native models and logistic regression are a few arithmetic operations per candidate
 * and always stay inline; tree ensembles cost about one root-to-leaf walk per tree per candidate,
 * so a task goes to the pool when trees × candidates over its primary and shadow gradient-boosted
 * models reaches the threshold. The threshold is the caller's: measure the crossover (bench/).
 */
import type { ScoreTask } from "./score-candidates.js";

export type ScoringPath = "inline" | "pool";

/** Tree walks the task needs: Σ over its gradient-boosted models of trees × candidates. */
export function treeWalks(task: ScoreTask): number {
  const keys = new Set([task.modelKey, ...task.shadowModelKeys]);
  let trees = 0;
  for (const key of keys) {
    const model = task.models[key];
    if (model?.type === "gradient_boosted" && Array.isArray(model.trees)) trees += model.trees.length;
  }
  return trees * task.candidates.length;
}

export function chooseScoringPath(task: ScoreTask, minTreeWalksForPool: number): ScoringPath {
  const walks = treeWalks(task);
  return walks > 0 && walks >= minTreeWalksForPool ? "pool" : "inline";
}

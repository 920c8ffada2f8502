import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { CandidateScore, ScoreTask } from "../core/index.js";

/**
 * The worker pool for expensive scoring (large tree ensembles), one task per request. Workers load
 * workers/scoring-worker.ts, which imports only src/core; under tsx they inherit `--import tsx`.
 */
export function createScoringPool(threads = Math.max(1, availableParallelism() - 1)) {
  const pool = new Piscina<ScoreTask, CandidateScore[]>({
    filename: new URL("../../workers/scoring-worker.ts", import.meta.url).href,
    minThreads: 1,
    maxThreads: threads,
  });
  return {
    run: (task: ScoreTask) => pool.run(task),
    close: () => pool.destroy(),
  };
}

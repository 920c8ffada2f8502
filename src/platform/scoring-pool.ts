import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import type { CandidateScore, ScoreTask } from "../core/index.js";
import type { Logger } from "./logger.js";

/**
 * The worker pool for expensive scoring (large tree ensembles), one task per request. Workers load
 * workers/scoring-worker.ts, which imports only src/core; under tsx they inherit `--import tsx`.
 */
export function createScoringPool(logger: Logger, threads = Math.max(1, availableParallelism() - 1)) {
  const pool = new Piscina<ScoreTask, CandidateScore[]>({
    filename: new URL("../../workers/scoring-worker.ts", import.meta.url).href,
    // No thread until a task needs one: most tasks score inline, and the CLI never scores.
    minThreads: 0,
    maxThreads: threads,
  });
  // A worker that fails to start must not take the service down: the task fails, scoring falls back.
  pool.on("error", (err) => logger.error({ err }, "scoring worker failed"));
  return {
    run: (task: ScoreTask) => pool.run(task),
    /** Tasks waiting for a thread, and threads running: what the metrics show. */
    queueSize: () => pool.queueSize,
    threads: () => pool.threads.length,
    close: () => pool.destroy(),
  };
}

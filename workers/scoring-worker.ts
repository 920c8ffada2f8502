/**
 * Piscina worker entry: scores one ScoreTask off the event loop. It imports only src/core, so a
 * worker scores exactly as the in-process path does. Under tsx the worker thread inherits the
 * parent's `--import tsx` (Piscina passes `execArgv` through), which is how this .ts file loads.
 */
import { scoreCandidates, type CandidateScore, type ScoreTask } from "../src/core/index.js";

export default function scoreTask(task: ScoreTask): CandidateScore[] {
  return scoreCandidates(task);
}

import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ExpiredRun } from "./pipeline-store.js";

export interface ExpiredRunsOptions {
  claim(claimMs: number, legacyAfterMs: number, limit: number): Promise<ExpiredRun[]>;
  /** Finishes one claimed run as failed; false when there was nothing left to finish. */
  finish(run: ExpiredRun): Promise<boolean>;
  logger: Logger;
}

const MINUTE = 60_000;
/**
 * How long the sweep holds a run it claimed: a sweep that dies before finishing it leaves it to a
 * later one. Finishing takes a few queries, so this is ample.
 */
const CLAIM_MS = 5 * MINUTE;
/**
 * Runs started before leases (migration 0034) have none, and nothing tells a live one from a dead
 * one: they are taken once they started this long ago. As long as the scheduler lets a pipeline's
 * own slot run before another process may take it over (pipeline-schedule-job.ts): a run of the old
 * code still going after that is assumed gone.
 */
export const LEGACY_RUN_MS = 6 * 60 * MINUTE;
const BATCH = 100;

/**
 * Finishes the runs whose process stopped before finishing them (killed, out of memory, powered
 * off): their lease ran out, since nobody renewed it. Each is recorded as failed through the
 * runner (error, `finished_at`, dead letter, the pipeline's failed health alert), once, whichever
 * processes sweep at the same time. Every minute, and on the `tick` route under SCHEDULER=off.
 */
export function expiredRunsJob(o: ExpiredRunsOptions): ScheduledJob {
  return {
    name: "ingestion-expired-runs",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    route: "tick",
    async run() {
      let failures = 0;
      for (;;) {
        const runs = await o.claim(CLAIM_MS, LEGACY_RUN_MS, BATCH);
        for (const run of runs) {
          try {
            await o.finish(run);
          } catch (err) {
            // Claimed, so the next sweeps skip it until CLAIM_MS has passed; then it is tried again.
            failures++;
            o.logger.warn({ err, tenantId: run.tenant_id, pipelineId: run.pipeline_id, runId: run.id }, "expired ingestion run not finished");
          }
        }
        if (runs.length < BATCH) break;
      }
      if (failures) throw new Error(`${failures} expired ingestion runs could not be finished`);
    },
  };
}

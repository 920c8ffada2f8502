import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "./scheduled-job.js";
import type { ScheduledRunStore } from "./scheduled-run-store.js";

/** How long `scheduled_runs` remembers a finished slot: long enough to look back at last month. */
export const RUN_RETENTION_DAYS = 30;

/**
 * The scheduler's own job: `scheduled_runs` gains a row per slot of every job (half a million a
 * year for a job that runs every minute), so slots older than the retention are deleted daily.
 * A slot that old can no longer be claimed by anyone: routes and drivers only fire current slots.
 */
export function runRetentionJob(store: ScheduledRunStore, logger: Logger): ScheduledJob {
  return {
    name: "scheduled-runs-retention",
    schedule: { cron: "17 3 * * *", timezone: "UTC" },
    route: "tick",
    async run(slot) {
      const deleted = await store.deleteFinishedBeforeAcrossTenants(new Date(slot.getTime() - RUN_RETENTION_DAYS * 86_400_000));
      logger.info({ deleted, retentionDays: RUN_RETENTION_DAYS }, "old scheduled runs deleted");
    },
  };
}

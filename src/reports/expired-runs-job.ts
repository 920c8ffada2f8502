import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ReportRunStore } from "./report-run-store.js";

/** The error of a run whose process stopped before it ended. */
export const REPORT_LEASE_EXPIRED_ERROR = "the process running it stopped before it finished (lease expired)";
/**
 * How long a scheduled run whose lease ran out waits for its slot's take-over before it is ended:
 * without Redis, a restarted node takes over the slots of the last 24 hours (docs/operations.md).
 */
export const UNCLAIMED_RUN_MS = 24 * 60 * 60_000;

/**
 * `reports.expired-runs`, every minute (and on `/api/cron/tick`): ends as failed the runs whose
 * process stopped before they ended (docs/reports.md, "Runs whose process stopped").
 */
export function expiredReportRunsJob(runs: ReportRunStore, logger: Logger): ScheduledJob {
  return {
    name: "reports.expired-runs",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    route: "tick",
    async run() {
      const ended = await runs.failExpiredAcrossTenants(REPORT_LEASE_EXPIRED_ERROR, UNCLAIMED_RUN_MS);
      if (ended) logger.warn({ ended }, "report runs whose process stopped were ended as failed");
    },
  };
}

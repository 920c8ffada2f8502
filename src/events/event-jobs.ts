import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { EnrollmentStore } from "./enrollment-store.js";
import type { EventStore } from "./event-store.js";

/** Rows one statement deletes: short transactions, so ingestion never waits long behind the job. */
export const EVENT_RETENTION_BATCH = 5_000;

const DAY_MS = 86_400_000;

/**
 * The daily events-retention job (docs/events.md, "Retention"): every tenant's inbound events whose
 * time is older than `retentionDays` before the slot are deleted, one tenant at a time, in batches of
 * EVENT_RETENTION_BATCH. The cutoff is computed from the slot, so a retried slot deletes the same set
 * (idempotent); a run interrupted between batches leaves the rest to the next run.
 */
export function eventRetentionJob(store: Pick<EventStore, "nextTenantWithEvents" | "deleteOlderThan">, retentionDays: number, logger: Logger, batch = EVENT_RETENTION_BATCH): ScheduledJob {
  return {
    name: "events-retention",
    schedule: { cron: "41 3 * * *", timezone: "UTC" },
    // With SCHEDULER=off the tick route still runs it: once per daily slot, like every job.
    route: "tick",
    async run(slot) {
      const cutoff = new Date(slot.getTime() - retentionDays * DAY_MS);
      let total = 0;
      for (let tenantId = await store.nextTenantWithEvents(null); tenantId !== null; tenantId = await store.nextTenantWithEvents(tenantId)) {
        let deleted = 0;
        let n: number;
        do {
          n = await store.deleteOlderThan(tenantId, cutoff, batch);
          deleted += n;
        } while (n === batch);
        if (deleted) logger.info({ tenantId, deleted, retentionDays }, "old customer events deleted");
        total += deleted;
      }
      logger.info({ deleted: total, retentionDays, cutoff: cutoff.toISOString() }, "events retention finished");
    },
  };
}

/** Enrollments one statement completes. */
const COMPLETION_BATCH = 5_000;

/**
 * journeys-complete: every 5 minutes, active enrollments whose journey duration has passed become
 * `completed` (ended_at = when they were due). Enrolment completes a due one itself before
 * admitting the customer again, so this job keeps statuses true for reads, not re-entry correct.
 */
export function journeyCompletionJob(store: Pick<EnrollmentStore, "completeDue">, logger: Logger): ScheduledJob {
  return {
    name: "journeys-complete",
    schedule: { everyMs: 300_000 },
    route: "tick",
    async run(slot) {
      let completed = 0;
      let n: number;
      do {
        n = await store.completeDue(slot, COMPLETION_BATCH);
        completed += n;
      } while (n === COMPLETION_BATCH);
      if (completed) logger.info({ completed }, "journey enrollments completed");
    },
  };
}

/**
 * What a domain hands the scheduler: a named job, its schedule and an idempotent handler. Domains
 * export their jobs and `src/main.ts` registers them, so no domain depends on how the scheduler
 * keeps "once per slot" across processes (docs/adr, the scheduler's ADR).
 */

/** A cron expression in an IANA time zone, or a fixed interval. */
export type JobSchedule = { cron: string; timezone: string } | { everyMs: number };

/** The cron routes of spec 4.21 that run a job on demand. */
export type CronRoute = "tick" | "approvals-expire" | "scheduled-retrains";

export interface ScheduledJob {
  /** Stable and unique: the scheduler's key, and with the slot the job's idempotency key. */
  name: string;
  schedule: JobSchedule;
  /** The cron route that also runs this job on demand, if any. */
  route?: CronRoute;
  /** Runs the slot that started at `slot`. Must be idempotent per slot: a retry runs it again. */
  run(slot: Date): Promise<void>;
}

/**
 * What a domain hands the scheduler: a named job, its schedule and an idempotent handler. Domains
 * export their jobs and `src/main.ts` registers them, so no domain depends on how the scheduler
 * keeps "once per slot" across processes (docs/adr, the scheduler's ADR).
 */

/** A cron expression in an IANA time zone, or a fixed interval. */
export type JobSchedule = { cron: string; timezone: string } | { everyMs: number };

/** The cron routes of spec 4.21 that run a job on demand. */
export type CronRoute = "tick" | "approvals-expire" | "scheduled-retrains";

/**
 * Which slot a call of the job's route runs (docs/operations.md, "Each call runs ..."):
 * - `current-slot`: the slot the schedule is in at the call, once per slot like the scheduler's, so
 *   a second call in the same slot is skipped. For work that belongs to a slot (an evaluation
 *   window, a day's retention).
 * - `now`: a slot of its own at the call's instant, so every call runs the job then. For work whose
 *   result depends on when it runs and that a caller asks for by name (approval expiry: what is
 *   stale at the call). Its handler must be safe when runs overlap: two calls are two slots.
 */
export type RouteCall = "current-slot" | "now";

export interface ScheduledJob {
  /** Stable and unique: the scheduler's key, and with the slot the job's idempotency key. */
  name: string;
  schedule: JobSchedule;
  /** The cron route that also runs this job on demand, if any. */
  route?: CronRoute;
  /** What a call of `route` runs; `current-slot` when unset. */
  routeCall?: RouteCall;
  /**
   * Runs the slot that started at `slot`. Must be idempotent per slot: a retry runs it again.
   * `claims` runs work of the job's own that has slots of its own (a report schedule's) once
   * across processes, through the same claim as the job's slots. The scheduler always passes it;
   * a test that calls a job's handler directly may leave it out.
   */
  run(slot: Date, claims?: SlotClaims): Promise<void>;
}

/**
 * Dynamic slots inside a job (docs/operations.md, "Dynamic slots"): `name` is a stable key such as
 * `reports.schedule:<id>`; `run` happens at most once per (name, slot) whichever process asks,
 * retried under the job's retry policy when it throws. Resolves with the attempt's outcome.
 */
export interface SlotClaims {
  runOnce(name: string, slot: Date, run: () => Promise<void>): Promise<"succeeded" | "failed" | "skipped">;
}

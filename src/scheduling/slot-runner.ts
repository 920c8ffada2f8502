import type { Logger } from "../platform/logger.js";
import type { ScheduledJob, SlotClaims } from "./scheduled-job.js";
import type { ScheduledRunStore } from "./scheduled-run-store.js";
import type { RetryPolicy } from "./retry-policy.js";

/** What started an attempt: the in-process scheduler, or a cron route called from outside. */
export type RunTrigger = "scheduler" | "route";

/** Why an attempt was not started: the slot is another runner's, done, or out of attempts. */
export type SkipReason = "already_running" | "already_succeeded" | "attempts_exhausted";

export type RunOutcome =
  | { status: "succeeded"; attempt: number; durationMs: number }
  | { status: "failed"; attempt: number; durationMs: number; error: string; retryable: boolean }
  | { status: "skipped"; reason: SkipReason; attempts: number; durationMs: number };

/** Called after every attempt, skipped ones included; the metrics of the observability domain hang here. */
export type OnRun = (job: string, slot: Date, outcome: RunOutcome["status"], durationMs: number) => void;

export interface SlotRunnerOptions {
  store: ScheduledRunStore;
  logger: Logger;
  retry: RetryPolicy;
  /** How long a claim holds without renewal; a runner that dies mid-run loses the slot after it. */
  leaseMs: number;
  onRun?: OnRun;
}

/** How long a handler's error message may be in the table and the log. */
const MAX_ERROR_CHARS = 2_000;

/**
 * Runs one attempt of one slot: claims (job, slot) in `scheduled_runs`, runs the handler while
 * renewing the claim's lease, and records the end. Both drivers and the cron routes go through
 * here, so a slot runs once whoever fires it, and each failure is logged with its attempt number.
 */
export class SlotRunner {
  constructor(private readonly options: SlotRunnerOptions) {}

  get retry(): RetryPolicy {
    return this.options.retry;
  }

  /** Claimed slots of these jobs from `since` on that no attempt finished (scheduled-run-store.ts). */
  unfinished(jobNames: readonly string[], since: Date): Promise<Array<{ job_name: string; slot: Date; lease_until: Date }>> {
    return this.options.store.unfinishedAcrossTenants(jobNames, since);
  }

  /**
   * `reportAs` names the attempt for the onRun hook: a dynamic slot reports under its job's name,
   * so that metrics keep one series per job however many schedules a domain holds.
   */
  async attempt(job: ScheduledJob, slot: Date, trigger: RunTrigger, reportAs = job.name): Promise<RunOutcome> {
    const { store, logger, retry, leaseMs } = this.options;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const log = { job: job.name, slot: slot.toISOString(), trigger };
    const claim = await store.claimAcrossTenants(job.name, slot, retry.attempts, leaseMs);
    if (!claim.claimed) {
      const { status, attempts } = claim.current;
      const reason: SkipReason = status === "running" ? "already_running" : status === "succeeded" ? "already_succeeded" : "attempts_exhausted";
      logger.debug({ ...log, reason }, "scheduled slot skipped");
      return this.report(reportAs, slot, { status: "skipped", reason, attempts, durationMs: elapsed() });
    }
    const attempt = claim.attempt;
    const renew = setInterval(() => {
      store.renewLeaseAcrossTenants(job.name, slot, attempt, leaseMs).then(
        (held) => held || logger.warn({ ...log, attempt }, "scheduled slot taken over by another runner while running"),
        (err) => logger.warn({ ...log, attempt, err }, "scheduled slot lease renewal failed"),
      );
    }, Math.max(1, Math.floor(leaseMs / 3)));
    try {
      await job.run(slot, this.claims(job, trigger));
    } catch (err) {
      const error = (err instanceof Error ? err.message : String(err)).slice(0, MAX_ERROR_CHARS);
      const retryable = attempt < retry.attempts;
      await store.finishAcrossTenants(job.name, slot, attempt, "failed", error);
      logger[retryable ? "warn" : "error"](
        { ...log, attempt, maxAttempts: retry.attempts, err },
        retryable ? "scheduled job failed; the slot has attempts left" : "scheduled job failed; no attempts left",
      );
      return this.report(reportAs, slot, { status: "failed", attempt, error, retryable, durationMs: elapsed() });
    } finally {
      clearInterval(renew);
    }
    await store.finishAcrossTenants(job.name, slot, attempt, "succeeded", null);
    logger.info({ ...log, attempt, durationMs: elapsed() }, "scheduled job ran");
    return this.report(reportAs, slot, { status: "succeeded", attempt, durationMs: elapsed() });
  }

  /** A job's dynamic slots: each claimed in `scheduled_runs` under its own name, like a job's. */
  private claims(parent: ScheduledJob, trigger: RunTrigger): SlotClaims {
    return {
      runOnce: async (name, slot, run) =>
        (await this.attempt({ name, schedule: parent.schedule, run: () => run() }, slot, trigger, parent.name)).status,
    };
  }

  /** A failing hook (metrics) must not fail the job or its bookkeeping. */
  private report(jobName: string, slot: Date, outcome: RunOutcome): RunOutcome {
    try {
      this.options.onRun?.(jobName, slot, outcome.status, outcome.durationMs);
    } catch (err) {
      this.options.logger.warn({ job: jobName, err }, "scheduler onRun hook failed");
    }
    return outcome;
  }
}

import type { Logger } from "../platform/logger.js";
import { settledWithin } from "../platform/settled-within.js";
import type { JobRegistry } from "./job-registry.js";
import type { ScheduledJob } from "./scheduled-job.js";
import type { SchedulerDriver } from "./scheduler-driver.js";
import type { SlotRunner } from "./slot-runner.js";
import { nextSlot } from "./job-schedule.js";
import { retryDelayMs } from "./retry-policy.js";

/** setTimeout fires at once for delays above 2^31 - 1 ms (about 24.8 days): longer waits go in legs. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** How far back a start looks for slots its node claimed and never finished: older work is not resumed. */
const TAKE_OVER_WINDOW_MS = 24 * 60 * 60 * 1000;

/** After a dead claim's lease, so that the database's clock has also seen it run out. */
const TAKE_OVER_MARGIN_MS = 1_000;

/**
 * The single-node default (no REDIS_URL): timers in this process fire each slot, and failed
 * attempts are retried after the same backoff BullMQ would use. Two processes with this driver
 * would both fire every slot; the claim in `scheduled_runs` still runs it once, but retries are this
 * process's alone, hence "single node only". A start takes over the slots the node left unfinished.
 */
export function createLocalDriver(options: { registry: JobRegistry; runner: SlotRunner; logger: Logger }): SchedulerDriver {
  const { registry, runner, logger } = options;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<void>>();
  let stopped = false;

  const later = (ms: number, fn: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) fn();
    }, ms);
    timers.add(timer);
  };

  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  /** `tries` counts this process's tries of the slot, for when the bookkeeping itself fails. */
  const attempt = (job: ScheduledJob, slot: Date, tries = 1) => {
    const retry = runner.retry;
    track(
      runner.attempt(job, slot, "scheduler").then(
        (outcome) => {
          if (outcome.status === "failed" && outcome.retryable) later(retryDelayMs(retry, outcome.attempt), () => attempt(job, slot));
        },
        // The claim or the record failed (database down): the slot is tried again, as often as a failing job.
        (err) => {
          const again = tries < retry.attempts;
          logger[again ? "warn" : "error"]({ job: job.name, slot: slot.toISOString(), tries, err }, "scheduled slot could not be run");
          if (again) later(retryDelayMs(retry, tries), () => attempt(job, slot, tries + 1));
        },
      ),
    );
  };

  const scheduleNext = (job: ScheduledJob, after: Date) => {
    const slot = nextSlot(job.schedule, after);
    if (!slot) return;
    const wait = () => {
      const ms = slot.getTime() - Date.now();
      if (ms > MAX_TIMER_MS) return later(MAX_TIMER_MS, wait);
      later(Math.max(0, ms), () => {
        attempt(job, slot);
        scheduleNext(job, slot);
      });
    };
    wait();
  };

  return {
    kind: "local",
    async start() {
      for (const job of registry.all()) scheduleNext(job, new Date());
      // A slot this node claimed and never finished (its process was killed) is taken over once the
      // claim's lease runs out, as another process would take it over with Redis (docs/operations.md).
      const jobs = registry.all().map((job) => job.name);
      for (const row of await runner.unfinished(jobs, new Date(Date.now() - TAKE_OVER_WINDOW_MS))) {
        const job = registry.get(row.job_name)!;
        later(Math.max(0, row.lease_until.getTime() - Date.now()) + TAKE_OVER_MARGIN_MS, () => attempt(job, row.slot));
      }
    },
    async stop(graceMs) {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await settledWithin(Promise.allSettled([...inFlight]), graceMs);
    },
  };
}

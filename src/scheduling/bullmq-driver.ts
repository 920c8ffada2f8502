import { Queue, Worker, type Job } from "bullmq";
import { Cluster } from "ioredis";
import type { Logger } from "../platform/logger.js";
import { settledWithin } from "../platform/settled-within.js";
import type { RedisTarget } from "../platform/redis.js";
import type { JobRegistry } from "./job-registry.js";
import type { JobSchedule } from "./scheduled-job.js";
import type { SchedulerDriver } from "./scheduler-driver.js";
import type { SlotRunner } from "./slot-runner.js";
import { nextSlot } from "./job-schedule.js";
import { retryDelayMs } from "./retry-policy.js";

/** How long a stop that had to drop its connections waits for them to say they ended. */
const DISCONNECT_WAIT_MS = 500;

/** The one queue every process shares; its keys are in one Redis Cluster hash tag (the prefix's `{scheduler}`). */
const QUEUE_NAME = "scheduler";

/**
 * Intervals travel as a pattern that only our repeat strategy reads, so that croner's slots (for
 * cron expressions) and epoch-aligned intervals are computed by the same code as the cron routes'.
 * BullMQ's own `every` would align slots to the moment the scheduler was first created.
 */
const EVERY_PATTERN = /^every (\d+)ms$/;

function patternOf(schedule: JobSchedule): { pattern: string; tz?: string } {
  return "everyMs" in schedule ? { pattern: `every ${schedule.everyMs}ms` } : { pattern: schedule.cron, tz: schedule.timezone };
}

function scheduleOf(pattern: string, tz: string | undefined): JobSchedule {
  const every = EVERY_PATTERN.exec(pattern);
  return every ? { everyMs: Number(every[1]) } : { cron: pattern, timezone: tz ?? "UTC" };
}

/**
 * BullMQ job schedulers: each process upserts one scheduler per job (idempotent), and BullMQ keeps
 * one delayed job per scheduler whose id is `repeat:<job>:<slot ms>`, so a slot exists once in Redis
 * and one worker of one process takes it. Failed attempts are retried by BullMQ with our backoff,
 * and a job whose process died is taken over by another after the stalled-job check.
 */
export function createBullmqDriver(options: {
  /** REDIS_URL, or REDIS_CLUSTER_NODES. */
  redis: RedisTarget;
  /** REDIS_KEY_PREFIX: ioredis's keyPrefix is not allowed with BullMQ, which takes its own. */
  keyPrefix: string;
  registry: JobRegistry;
  runner: SlotRunner;
  logger: Logger;
}): SchedulerDriver {
  const { registry, runner, logger } = options;
  // BullMQ's blocking commands must wait as long as they need: no retry limit per request. A single
  // node is given as options (queue and worker each connect); a cluster as one shared client, which
  // BullMQ does not close, so stop() does; the worker duplicates it for its blocking connection.
  const cluster = typeof options.redis === "string" ? null : new Cluster(options.redis.map((n) => ({ ...n })), { redisOptions: { maxRetriesPerRequest: null } });
  cluster?.on("error", (err: Error) => logger.warn({ err: err.message }, "scheduler cluster connection error"));
  const connection = cluster ?? { url: options.redis as string, maxRetriesPerRequest: null };
  const prefix = `${options.keyPrefix}{scheduler}`;
  const settings = {
    repeatStrategy: (millis: number, repeat: { pattern?: string; tz?: string }) =>
      nextSlot(scheduleOf(repeat.pattern!, repeat.tz), new Date(millis))?.getTime(),
    backoffStrategy: (attemptsMade: number) => retryDelayMs(runner.retry, attemptsMade),
  };
  let queue: Queue | null = null;
  let worker: Worker | null = null;

  const processJob = async (job: Job): Promise<void> => {
    const scheduled = registry.get(job.name);
    if (!scheduled) {
      logger.warn({ job: job.name }, "BullMQ delivered a job this process does not know; ignored");
      return;
    }
    const slot = new Date(Number(job.id!.slice(job.id!.lastIndexOf(":") + 1)));
    const outcome = await runner.attempt(scheduled, slot, "scheduler");
    // Thrown, BullMQ retries after our backoff; the attempt has been recorded and logged already.
    if (outcome.status === "failed" && outcome.retryable) throw new Error(outcome.error);
  };

  return {
    kind: "bullmq",
    async start() {
      queue = new Queue(QUEUE_NAME, { connection, prefix, settings });
      queue.on("error", (err) => logger.warn({ err: err.message }, "scheduler queue error"));
      const jobs = registry.all();
      for (const job of jobs) {
        await queue.upsertJobScheduler(job.name, patternOf(job.schedule), {
          name: job.name,
          opts: {
            attempts: runner.retry.attempts,
            backoff: { type: "scheduled-backoff" },
            removeOnComplete: { count: 100 },
            removeOnFail: { count: 100 },
          },
        });
      }
      // Jobs no longer registered by any domain would otherwise fire forever (docs/operations.md).
      for (const scheduler of await queue.getJobSchedulers()) {
        if (!registry.get(scheduler.key)) await queue.removeJobScheduler(scheduler.key);
      }
      worker = new Worker(QUEUE_NAME, processJob, { connection, prefix, settings, concurrency: Math.max(1, jobs.length) });
      worker.on("error", (err) => logger.warn({ err: err.message }, "scheduler worker error"));
    },
    async stop(graceMs) {
      // close() waits for running attempts, and for Redis: with Redis gone, or reconnecting, it
      // would wait forever. After the grace the connections are dropped, which stops ioredis from
      // reconnecting so that the process can exit; their "end" may never come (a client that was
      // reconnecting has no socket to close), so that is not waited for either.
      const inTime = await settledWithin(Promise.all([worker?.close(), queue?.close()]), graceMs);
      if (!inTime) {
        logger.warn({ graceMs }, "scheduler did not stop within the grace (Redis unreachable or a job still running); disconnecting");
        const dropped = Promise.all([worker?.disconnect(), queue?.disconnect()]);
        await settledWithin(dropped, DISCONNECT_WAIT_MS);
      }
      cluster?.disconnect();
    },
  };
}

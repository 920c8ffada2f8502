import type { Sequelize } from "sequelize";
import type { Logger } from "../platform/logger.js";
import type { RedisTarget } from "../platform/redis.js";
import type { CronRoute, ScheduledJob } from "./scheduled-job.js";
import { JobRegistry } from "./job-registry.js";
import { currentSlot } from "./job-schedule.js";
import { ScheduledRunStore } from "./scheduled-run-store.js";
import { SlotRunner, type OnRun, type RunOutcome } from "./slot-runner.js";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "./retry-policy.js";
import type { SchedulerDriver } from "./scheduler-driver.js";
import { createBullmqDriver } from "./bullmq-driver.js";
import { createLocalDriver } from "./local-driver.js";
import { runRetentionJob } from "./run-retention.js";

/** A claim held this long without renewal is taken over (runners renew every third of it). */
export const DEFAULT_LEASE_MS = 30_000;

export interface SchedulerOptions {
  /** The domains' jobs; the scheduler adds its own (run-retention.ts). */
  jobs: readonly ScheduledJob[];
  db: Sequelize;
  logger: Logger;
  /** With Redis: BullMQ job schedulers shared by every process. Without: local timers, single node only. */
  redis: { target: RedisTarget; keyPrefix: string } | null;
  /** SCHEDULER=off: nothing fires in-process; the cron routes still run jobs. */
  enabled: boolean;
  retry?: RetryPolicy;
  leaseMs?: number;
  /** Called after every attempt (metrics). */
  onRun?: OnRun;
}

/** One job's part in a cron route call. */
export interface RouteRun {
  job: string;
  slot: Date;
  outcome: RunOutcome;
}

export interface Scheduler {
  /** Which driver fires slots in this process, or `off`. */
  readonly driver: SchedulerDriver["kind"] | "off";
  start(): Promise<void>;
  stop(graceMs: number): Promise<void>;
  /**
   * Runs every job on `route` (spec 4.21 cron routes): the slot its schedule is in at `at`, once per
   * slot, or, for a job whose `routeCall` is `now`, a slot of its own at `at`.
   */
  runRoute(route: CronRoute, at?: Date): Promise<RouteRun[]>;
}

/**
 * The scheduler of one process (docs/adr/0005-scheduler.md): the job registry, the slot runner that
 * makes every slot run once, and the driver that fires slots. Jobs are platform jobs that work
 * across tenants; a handler that works per tenant scopes itself.
 */
export function createScheduler(options: SchedulerOptions): Scheduler {
  const { logger } = options;
  const store = new ScheduledRunStore(options.db);
  const registry = new JobRegistry([runRetentionJob(store, logger), ...options.jobs]);
  const runner = new SlotRunner({
    store,
    logger,
    retry: options.retry ?? DEFAULT_RETRY_POLICY,
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_MS,
    onRun: options.onRun,
  });
  const driver: SchedulerDriver | null = !options.enabled
    ? null
    : options.redis
      ? createBullmqDriver({ redis: options.redis.target, keyPrefix: options.redis.keyPrefix, registry, runner, logger })
      : createLocalDriver({ registry, runner, logger });
  return {
    driver: driver?.kind ?? "off",
    async start() {
      if (!driver) {
        logger.info("SCHEDULER=off: scheduled jobs run only through the cron routes");
        return;
      }
      await driver.start();
      const jobs = registry.all().map((j) => j.name);
      if (driver.kind === "local") logger.info({ jobs }, "scheduler on local timers (neither REDIS_URL nor REDIS_CLUSTER_NODES set): single node only");
      else logger.info({ jobs }, "scheduler on BullMQ job schedulers: each slot runs once across processes");
    },
    async stop(graceMs) {
      await driver?.stop(graceMs);
    },
    async runRoute(route, at = new Date()) {
      return Promise.all(
        registry.onRoute(route).flatMap((job) => {
          const slot = job.routeCall === "now" ? at : currentSlot(job.schedule, at);
          return slot ? [runner.attempt(job, slot, "route").then((outcome) => ({ job: job.name, slot, outcome }))] : [];
        }),
      );
    },
  };
}

import { Cron } from "croner";
import { isAppError } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { RunLease } from "../platform/run-lease.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ScheduledRunStore } from "../scheduling/scheduled-run-store.js";
import { SHUTDOWN_ERROR } from "./pipeline-runner.js";
import type { PipelineRow } from "./pipeline-store.js";

interface ScheduledPipeline {
  tenant_id: string;
  id: string;
  schedule: string;
}

export interface PipelineScheduleOptions {
  scheduled(): Promise<ScheduledPipeline[]>;
  find(tenantId: string, id: string): Promise<PipelineRow | null>;
  run(row: PipelineRow): Promise<{ ok: boolean; error: string | null }>;
  runs: ScheduledRunStore;
  /** RUN_LEASE_MS: a slot's claim holds this long without renewal, and is renewed every third of it while its run goes on. */
  leaseMs: number;
  logger: Logger;
}

const MINUTE = 60_000;
const SLOT_PREFIX = "ingestion-pipeline:";
/** How far back a slot that a stop or a crash interrupted is still run again: older ones wait for their next slot. */
const RESUME_WINDOW_MS = 24 * 60 * MINUTE;
/** Tries of one slot in all, the interrupted ones included, so that a run that brings its process down is not tried for ever. */
const SLOT_ATTEMPTS = 3;

/**
 * The scheduler's job list is static, so pipelines with a `schedule` run through one job that fires
 * every minute: it finds the pipelines whose cron has a fire time in that minute and claims each
 * one's own slot (`ingestion-pipeline:<tenant>:<id>` in scheduled_runs) before running it, so a
 * pipeline runs once per slot whatever process or retry fires the minute.
 *
 * A slot whose run a stop of the service interrupted (recorded as failed with SHUTDOWN_ERROR), or
 * whose process died (its claim's lease ran out), is run again by the next minute's job, once the
 * service is back, if it is the pipeline's newest and from the last 24 hours and the pipeline is
 * still scheduled (docs/ingestion.md, "What a stop does to a run").
 */
export function pipelineScheduleJob(o: PipelineScheduleOptions): ScheduledJob {
  const runSlot = async (p: ScheduledPipeline, slot: Date, maxAttempts: number) => {
    const name = slotName(p);
    const claim = await o.runs.claimAcrossTenants(name, slot, maxAttempts, o.leaseMs);
    if (!claim.claimed) return;
    const lease = new RunLease({
      renew: () => o.runs.renewLeaseAcrossTenants(name, slot, claim.attempt, o.leaseMs),
      leaseMs: o.leaseMs,
      logger: o.logger,
      kind: "scheduled pipeline slot",
      runId: name,
    });
    let status: "succeeded" | "failed" = "failed";
    let error: string | null = null;
    try {
      const row = await o.find(p.tenant_id, p.id);
      if (row) {
        const result = await o.run(row);
        status = result.ok ? "succeeded" : "failed";
        error = result.error;
      }
    } catch (err) {
      // A stop that began before the run could start interrupted it all the same.
      error = isAppError(err) && err.reason === "SHUTTING_DOWN" ? SHUTDOWN_ERROR : (err as Error).message;
      o.logger.warn({ err, pipelineId: p.id }, "scheduled pipeline run failed to start");
    } finally {
      await lease.stop();
    }
    await o.runs.finishAcrossTenants(name, slot, claim.attempt, status, error);
  };

  return {
    name: "ingestion-pipelines",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    // An external cron (SCHEDULER=off) runs scheduled pipelines through the tick route.
    route: "tick",
    async run(slot) {
      const scheduled = await o.scheduled();
      const byName = new Map(scheduled.map((p) => [slotName(p), p]));
      for (const interrupted of await o.runs.interruptedAcrossTenants(SLOT_PREFIX, new Date(slot.getTime() - RESUME_WINDOW_MS), slot, SHUTDOWN_ERROR)) {
        const p = byName.get(interrupted.job_name);
        if (p) await runSlot(p, interrupted.slot, SLOT_ATTEMPTS);
      }
      const due = scheduled.filter((p) => {
        const next = new Cron(p.schedule, { timezone: "UTC", mode: "5-or-6-parts", paused: true }).nextRun(new Date(slot.getTime() - 1));
        return next !== null && next.getTime() < slot.getTime() + MINUTE;
      });
      for (const p of due) await runSlot(p, slot, 1);
    },
  };
}

const slotName = (p: ScheduledPipeline) => `${SLOT_PREFIX}${p.tenant_id}:${p.id}`;

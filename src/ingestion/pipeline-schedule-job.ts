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
  /** Runs the pipeline; `stop` aborts the run (its slot was taken over). */
  run(row: PipelineRow, stop: AbortSignal): Promise<{ ok: boolean; error: string | null }>;
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
/** Why a run stops when another process took its slot over (its claim's renewals failed for a whole lease). */
export const SLOT_TAKEN_OVER_ERROR = "stopped: its scheduled slot was taken over by another process";

/**
 * The scheduler's job list is static, so pipelines with a `schedule` run through one job that fires
 * every minute: it finds the pipelines whose cron has a fire time in that minute and claims each
 * one's own slot (`ingestion-pipeline:<tenant>:<id>` in scheduled_runs) before running it, so a
 * pipeline runs once per slot whatever process or retry fires the minute.
 *
 * Then it runs again each slot that a stop of the service interrupted (failed with SHUTDOWN_ERROR)
 * or whose process died (its claim's lease ran out), once the service is back, if it is the
 * pipeline's newest, from the last 24 hours, and the pipeline is still scheduled; the claim checks
 * all of that again, since the list may be a long run old (docs/ingestion.md, "Schedules"). A
 * pipeline due in this minute has a newer slot by then, so its interrupted one is not run.
 */
export function pipelineScheduleJob(o: PipelineScheduleOptions): ScheduledJob {
  /** Runs a slot that `claim` took (its attempt, or null when it was not to be had). */
  const runSlot = async (p: ScheduledPipeline, slot: Date, claim: (name: string) => Promise<number | null>) => {
    const name = slotName(p);
    const attempt = await claim(name);
    if (attempt === null) return;
    const lease = new RunLease({
      renew: () => o.runs.renewLeaseAcrossTenants(name, slot, attempt, o.leaseMs),
      leaseMs: o.leaseMs,
      logger: o.logger,
      kind: "scheduled pipeline slot",
      runId: name,
      lostError: SLOT_TAKEN_OVER_ERROR,
    });
    let status: "succeeded" | "failed" = "failed";
    let error: string | null = null;
    let refused = false;
    try {
      const row = await o.find(p.tenant_id, p.id);
      if (row) {
        const result = await o.run(row, lease.lost);
        status = result.ok ? "succeeded" : "failed";
        error = result.error;
      }
    } catch (err) {
      // A stop that began before the run could start: the slot is left to be run again, with its attempt back.
      refused = isAppError(err) && err.reason === "SHUTTING_DOWN";
      error = refused ? SHUTDOWN_ERROR : (err as Error).message;
      if (!refused) o.logger.warn({ err, pipelineId: p.id }, "scheduled pipeline run failed to start");
    } finally {
      await lease.stop();
    }
    if (refused) await o.runs.releaseAcrossTenants(name, slot, attempt, SHUTDOWN_ERROR);
    else await o.runs.finishAcrossTenants(name, slot, attempt, status, error);
  };

  return {
    name: "ingestion-pipelines",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    // An external cron (SCHEDULER=off) runs scheduled pipelines through the tick route.
    route: "tick",
    async run(slot) {
      const scheduled = await o.scheduled();
      const due = scheduled.filter((p) => {
        const next = new Cron(p.schedule, { timezone: "UTC", mode: "5-or-6-parts", paused: true }).nextRun(new Date(slot.getTime() - 1));
        return next !== null && next.getTime() < slot.getTime() + MINUTE;
      });
      for (const p of due) {
        await runSlot(p, slot, async (name) => {
          const claim = await o.runs.claimAcrossTenants(name, slot, 1, o.leaseMs);
          return claim.claimed ? claim.attempt : null;
        });
      }
      const byName = new Map(scheduled.map((p) => [slotName(p), p]));
      for (const interrupted of await o.runs.interruptedAcrossTenants(SLOT_PREFIX, new Date(slot.getTime() - RESUME_WINDOW_MS), slot, SHUTDOWN_ERROR)) {
        const p = byName.get(interrupted.job_name);
        if (p) await runSlot(p, interrupted.slot, (name) => o.runs.claimInterruptedAcrossTenants(name, interrupted.slot, SLOT_ATTEMPTS, o.leaseMs, SHUTDOWN_ERROR));
      }
    },
  };
}

const slotName = (p: ScheduledPipeline) => `${SLOT_PREFIX}${p.tenant_id}:${p.id}`;

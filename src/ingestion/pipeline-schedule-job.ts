import { Cron } from "croner";
import type { Logger } from "../platform/logger.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ScheduledRunStore } from "../scheduling/scheduled-run-store.js";
import type { PipelineRow } from "./pipeline-store.js";

export interface PipelineScheduleOptions {
  scheduled(): Promise<Array<{ tenant_id: string; id: string; schedule: string }>>;
  find(tenantId: string, id: string): Promise<PipelineRow | null>;
  run(row: PipelineRow): Promise<{ ok: boolean }>;
  runs: ScheduledRunStore;
  logger: Logger;
}

const MINUTE = 60_000;
/** A pipeline's own claim holds this long without renewal; a run longer than this may be taken over. */
const PIPELINE_LEASE_MS = 6 * 60 * MINUTE;

/**
 * The scheduler's job list is static, so pipelines with a `schedule` run through one job that fires
 * every minute: it finds the pipelines whose cron has a fire time in that minute and claims each
 * one's own slot (`ingestion-pipeline:<tenant>:<id>` in scheduled_runs) before running it, so a
 * pipeline runs once per slot whatever process or retry fires the minute.
 */
export function pipelineScheduleJob(o: PipelineScheduleOptions): ScheduledJob {
  return {
    name: "ingestion-pipelines",
    schedule: { cron: "* * * * *", timezone: "UTC" },
    // An external cron (SCHEDULER=off) runs scheduled pipelines through the tick route.
    route: "tick",
    async run(slot) {
      const due = (await o.scheduled()).filter((p) => {
        const next = new Cron(p.schedule, { timezone: "UTC", mode: "5-or-6-parts", paused: true }).nextRun(new Date(slot.getTime() - 1));
        return next !== null && next.getTime() < slot.getTime() + MINUTE;
      });
      for (const p of due) {
        const name = `ingestion-pipeline:${p.tenant_id}:${p.id}`;
        const claim = await o.runs.claimAcrossTenants(name, slot, 1, PIPELINE_LEASE_MS);
        if (!claim.claimed) continue;
        let status: "succeeded" | "failed" = "failed";
        let error: string | null = null;
        try {
          const row = await o.find(p.tenant_id, p.id);
          if (row) status = (await o.run(row)).ok ? "succeeded" : "failed";
        } catch (err) {
          error = (err as Error).message;
          o.logger.warn({ err, pipelineId: p.id }, "scheduled pipeline run failed to start");
        }
        await o.runs.finishAcrossTenants(name, slot, claim.attempt, status, error);
      }
    },
  };
}

import type { Logger } from "../platform/logger.js";
import type { TenantContext } from "../platform/context.js";
import { nextSlot } from "../scheduling/job-schedule.js";
import type { ScheduledJob } from "../scheduling/scheduled-job.js";
import type { ReportRunService } from "./report-run-service.js";
import type { ReportScheduleRow, ReportScheduleStore } from "./report-schedule-store.js";
import type { ReportTemplateStore } from "./report-template-store.js";

export const DUE_SCHEDULES_JOB = "reports.due-schedules";

/** Who a scheduled run acts as: the system, for the tenant. */
function scheduleContext(s: ReportScheduleRow, slot: Date): TenantContext {
  return {
    tenantId: s.tenant_id,
    userId: null,
    actorName: "system (report schedule)",
    role: "admin",
    principal: { kind: "internal" },
    requestId: `report-schedule:${s.id}:${slot.toISOString()}`,
  };
}

/**
 * One registered job for every report schedule (docs/reports.md, "Schedules"): each minute it reads
 * the schedules that are due and runs each one's slot (its `nextRunAt`) through the scheduler's
 * dynamic-slot claim `reports.schedule:<id>`, so a slot runs once however many processes tick; the
 * run's unique (schedule, slot) index is the backstop. A schedule deleted or edited on any process
 * is seen at the next tick, since schedules are rows, not timers. Missed slots (the service was
 * down) are not replayed: the next run is the first slot after this tick. Resolution is the minute:
 * a slot runs at the first tick at or after it.
 */
export function createDueSchedulesJob(deps: {
  schedules: ReportScheduleStore;
  templates: ReportTemplateStore;
  runs: ReportRunService;
  logger: Logger;
}): ScheduledJob {
  return {
    name: DUE_SCHEDULES_JOB,
    schedule: { cron: "* * * * *", timezone: "UTC" },
    route: "tick",
    async run(tick, claims) {
      const due = await deps.schedules.dueAcrossTenants(tick);
      for (const s of due) {
        const slot = s.next_run_at!;
        const work = async () => {
          const template = await deps.templates.find(s.tenant_id, s.template_id);
          if (template?.enabled) {
            await deps.runs.run(scheduleContext(s, slot), template, { triggeredBy: "cron", scheduleId: s.id, slot, destinations: s.destinations });
          } else {
            deps.logger.info({ scheduleId: s.id, templateId: s.template_id }, "report schedule skipped: its template is disabled");
          }
        };
        const outcome = claims ? await claims.runOnce(`reports.schedule:${s.id}`, slot, work) : (await work(), "succeeded");
        // A failed attempt with attempts left stays due and is retried on the next tick.
        if (outcome === "failed") continue;
        await deps.schedules.advance(s.tenant_id, s.id, slot, slot, nextSlot({ cron: s.cron_expression, timezone: s.timezone }, tick));
      }
    },
  };
}

import type { CronRunResponse } from "../../gen/decisioning/v1/scheduling_pb.js";
import type { TenantContext } from "../platform/context.js";
import type { CronRoute } from "./scheduled-job.js";
import type { Scheduler } from "./scheduler.js";
import { toCronRunResponse } from "./scheduling-mapper.js";

/**
 * The cron routes of spec 4.21. The gateway has checked the cron secret (PLANE_CRON); the context
 * names no tenant because the jobs are platform jobs.
 */
export class CronService {
  constructor(private readonly scheduler: Scheduler) {}

  runTick(_ctx: TenantContext): Promise<CronRunResponse> {
    return this.run("tick");
  }

  expireApprovals(_ctx: TenantContext): Promise<CronRunResponse> {
    return this.run("approvals-expire");
  }

  runScheduledRetrains(_ctx: TenantContext): Promise<CronRunResponse> {
    return this.run("scheduled-retrains");
  }

  private async run(route: CronRoute): Promise<CronRunResponse> {
    return toCronRunResponse(route, await this.scheduler.runRoute(route));
  }
}

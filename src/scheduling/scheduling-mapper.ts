import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { CronJobRunSchema, CronRunResponseSchema, type CronRunResponse } from "../../gen/decisioning/v1/scheduling_pb.js";
import type { CronRoute } from "./scheduled-job.js";
import type { RouteRun } from "./scheduler.js";

/** A cron route's answer: one entry per job, `ok` false when an attempt of this call failed. */
export function toCronRunResponse(route: CronRoute, runs: RouteRun[]): CronRunResponse {
  return create(CronRunResponseSchema, {
    ok: runs.every((r) => r.outcome.status !== "failed"),
    route,
    runs: runs.map(({ job, slot, outcome }) =>
      create(CronJobRunSchema, {
        job,
        slot: timestampFromDate(slot),
        status: outcome.status,
        reason: outcome.status === "skipped" ? outcome.reason : undefined,
        attempts: outcome.status === "skipped" ? outcome.attempts : outcome.attempt,
        durationMs: outcome.durationMs,
        error: outcome.status === "failed" ? outcome.error : undefined,
      }),
    ),
  });
}

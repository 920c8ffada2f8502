import { test } from "node:test";
import assert from "node:assert/strict";
import { pipelineScheduleJob, SLOT_TAKEN_OVER_ERROR } from "../../src/ingestion/pipeline-schedule-job.js";
import type { PipelineRow } from "../../src/ingestion/pipeline-store.js";
import type { ScheduledRunStore } from "../../src/scheduling/scheduled-run-store.js";
import { createLogger } from "../../src/platform/logger.js";

test("a scheduled run whose slot another process took over (its renewals failed for a whole lease) is stopped", async () => {
  const finished: unknown[][] = [];
  const runs = {
    claimAcrossTenants: async () => ({ claimed: true, attempt: 1 }),
    // The claim is no longer this runner's.
    renewLeaseAcrossTenants: async () => false,
    finishAcrossTenants: async (...args: unknown[]) => void finished.push(args),
    interruptedAcrossTenants: async () => [],
  } as unknown as ScheduledRunStore;
  const job = pipelineScheduleJob({
    scheduled: async () => [{ tenant_id: "t-1", id: "p-1", schedule: "* * * * *" }],
    find: async () => ({ id: "p-1", tenant_id: "t-1" }) as PipelineRow,
    // A run that goes on until it is stopped.
    run: (_row, stop) => new Promise((resolve) => stop.addEventListener("abort", () => resolve({ ok: false, error: (stop.reason as Error).message }))),
    runs,
    leaseMs: 30,
    logger: createLogger("silent"),
  });
  const slot = new Date("2030-01-01T00:00:00Z");
  // The lease's heartbeat does not keep a process up: this test must, until the run has stopped.
  const alive = setInterval(() => {}, 1_000);
  await job.run(slot, { runOnce: async () => "succeeded" }).finally(() => clearInterval(alive));
  assert.deepEqual(finished, [["ingestion-pipeline:t-1:p-1", slot, 1, "failed", SLOT_TAKEN_OVER_ERROR]]);
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { createSlotTable, slotRecorderJob, slotRows, type SlotRecorderSpec } from "../support/slot-recorder.js";
import { rest } from "../support/clients.js";

/**
 * Two service processes (this one and a child) on one PostgreSQL and one Redis, both with the same
 * one-second job, while both are also driven through the tick route: every slot runs exactly once.
 */
const CRON_SECRET = "cron-secret-for-the-two-process-test";
const EVERY_SECOND: SlotRecorderSpec = { name: "every-second", schedule: { cron: "* * * * * *", timezone: "Europe/Berlin" }, route: "tick" };

let svc: TestService;
let child: ChildService;

before(async () => {
  svc = await startTestService({ cronSecret: CRON_SECRET }, undefined, undefined, {
    extraJobs: (f) => [slotRecorderJob(f.db, EVERY_SECOND)],
  });
  await createSlotTable(svc.running.foundation.db);
  child = await startChildService(svc, {
    entry: "test/support/scheduler-child.ts",
    env: { CRON_SECRET, TEST_SLOT_JOBS: JSON.stringify([EVERY_SECOND]) },
  });
});
after(async () => {
  await child?.stop();
  await svc?.stop();
});

test("a one-second job runs exactly once per slot, with no gap, across two processes and the cron route", async () => {
  assert.equal(svc.running.services.scheduler.driver, "bullmq");
  const bothUp = Date.now();
  const tick = (baseUrl: string) => rest(baseUrl, "POST", "/api/cron/tick", { bearer: CRON_SECRET });
  const routeCalls: Array<Promise<{ status: number }>> = [];
  // 12 seconds of slots; the route is called on both processes at once, several times a second.
  while (Date.now() - bothUp < 12_500) {
    routeCalls.push(tick(svc.baseUrl), tick(child.baseUrl));
    await sleep(300);
  }
  for (const res of await Promise.all(routeCalls)) assert.equal(res.status, 200);
  await sleep(500); // the last slot's attempt finishes

  const rows = await slotRows(svc.running.foundation.db, EVERY_SECOND.name);
  const perSlot = new Map<number, number>();
  for (const row of rows) perSlot.set(row.slot.getTime(), (perSlot.get(row.slot.getTime()) ?? 0) + 1);
  const duplicated = [...perSlot].filter(([, n]) => n > 1).map(([slot]) => new Date(slot).toISOString());
  assert.deepEqual(duplicated, [], "no slot ran twice");

  // From the first slot after both processes were up, every second is there.
  const slots = [...perSlot.keys()].filter((s) => s >= bothUp).sort((a, b) => a - b);
  assert.ok(slots.length >= 10, `at least 10 slots ran, got ${slots.length}`);
  const gaps = slots.slice(1).filter((s, i) => s - slots[i] !== 1000).map((s) => new Date(s).toISOString());
  assert.deepEqual(gaps, [], "no slot was skipped");
  assert.ok(rows.every((r) => r.ok));
  // Both processes took slots: the schedule is shared, not run by one of them alone.
  assert.equal(new Set(rows.map((r) => r.pid)).size, 2);
});

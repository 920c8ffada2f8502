import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";
import { FUNNEL_THRESHOLDS, MIN_DECISIONS } from "../../src/alerts/decision-funnel-monitor.js";
import { startTestService, type TestService } from "../support/service.js";
import { createTestOperations, type TestOperations } from "../support/operations.js";

let svc: TestService;
let ops: TestOperations;
let monitor: ScheduledJob;

before(async () => {
  ops = createTestOperations();
  svc = await startTestService({}, undefined, undefined, ops);
  monitor = svc.running.services.jobs.find((j) => j.name === "alerts.decision-funnel")!;
});
after(() => svc.stop());

/** `count` decisions stored at `at`, each with `qualified` candidates of which `suppressed` were suppressed. */
async function insertDecisions(tenantId: string, count: number, row: { at: Date; empty?: boolean; qualified?: number; suppressed?: number }) {
  await svc.running.foundation.db.query(
    `INSERT INTO recommendations (tenant_id, id, customer_id, offers, qualified_count, suppressed_count, degraded_scoring, created_at)
     SELECT $1, gen_random_uuid(), 'bulk-' || g, $2::jsonb, $3, $4, false, $5 FROM generate_series(1, $6) AS g`,
    { bind: [tenantId, row.empty ? "[]" : JSON.stringify([{ rank: 1, offerId: randomUUID() }]), row.qualified ?? 4, row.suppressed ?? 0, row.at, count] },
  );
}

test("the monitor runs every 30 minutes in UTC, and on the tick route", () => {
  assert.deepEqual(monitor.schedule, { cron: "*/30 * * * *", timezone: "UTC" });
  assert.equal(monitor.route, "tick");
  assert.deepEqual(FUNNEL_THRESHOLDS, { suppression_rate: 0.8, empty_candidate_rate: 0.5 });
});

test("raises funnel alerts over the thresholds, not below the minimum of decisions, and clears them on recovery", async () => {
  const sick = (await svc.createTenant()).tenantId;
  const quietAfter = (await svc.createTenant()).tenantId;
  const small = (await svc.createTenant()).tenantId;
  const healthy = (await svc.createTenant()).tenantId;
  const slot = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const inWindow = new Date(slot.getTime() - 10 * 60_000);
  // 60 decisions: 55 with all 4 candidates suppressed and nothing returned, 5 healthy.
  for (const t of [sick, quietAfter]) {
    await insertDecisions(t, 55, { at: inWindow, empty: true, suppressed: 4 });
    await insertDecisions(t, 5, { at: inWindow });
  }
  await insertDecisions(small, MIN_DECISIONS - 1, { at: inWindow, empty: true, suppressed: 4 });
  await insertDecisions(healthy, 80, { at: inWindow, suppressed: 1 });
  await insertDecisions(healthy, 20, { at: inWindow, empty: true, suppressed: 4 });
  // Older than the window: would make `healthy` look sick if counted.
  await insertDecisions(healthy, 500, { at: new Date(slot.getTime() - 45 * 60_000), empty: true, suppressed: 4 });

  await monitor.run(slot);
  for (const t of [sick, quietAfter]) {
    const suppression = ops.healthAlerts.get(t, "funnel:suppression_rate");
    assert.ok(suppression, "suppression_rate over 0.8 raises");
    assert.equal(suppression.severity, "warning");
    assert.ok(Math.abs((suppression.details!.value as number) - 220 / 240) < 1e-9);
    assert.equal(suppression.details!.decisions, 60);
    const empty = ops.healthAlerts.get(t, "funnel:empty_candidate_rate");
    assert.ok(empty, "empty_candidate_rate over 0.5 raises");
    assert.ok(Math.abs((empty.details!.value as number) - 55 / 60) < 1e-9);
  }
  assert.equal(ops.healthAlerts.get(small, "funnel:suppression_rate"), undefined, "fewer than the minimum of decisions raises nothing");
  assert.equal(ops.healthAlerts.get(healthy, "funnel:suppression_rate"), undefined);
  assert.equal(ops.healthAlerts.get(healthy, "funnel:empty_candidate_rate"), undefined);

  await monitor.run(slot);
  assert.ok(ops.healthAlerts.get(sick, "funnel:suppression_rate"), "a repeated slot keeps the alert");

  // The next half hour: `sick` recovers with healthy traffic, `quietAfter` stops deciding.
  const next = new Date(slot.getTime() + 30 * 60_000);
  await insertDecisions(sick, 60, { at: new Date(next.getTime() - 5 * 60_000) });
  await monitor.run(next);
  for (const t of [sick, quietAfter]) {
    assert.equal(ops.healthAlerts.get(t, "funnel:suppression_rate"), undefined, "recovered or quiet: cleared");
    assert.equal(ops.healthAlerts.get(t, "funnel:empty_candidate_rate"), undefined);
  }
});

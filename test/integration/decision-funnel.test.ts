import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";
import { FUNNEL_THRESHOLDS, MIN_DECISIONS } from "../../src/alerts/decision-funnel-monitor.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

type Tenant = { tenantId: string; apiKey: string };

const CRON_SECRET = "funnel-test-cron-secret-0123456789";

let svc: TestService;
let monitor: ScheduledJob;

before(async () => {
  // The test runs the monitor for the slots it chooses; the scheduler's own runs would clear its alerts.
  svc = await startTestService({ schedulerEnabled: false, cronSecret: CRON_SECRET });
  monitor = svc.running.services.jobs.find((j) => j.name === "alerts.decision-funnel")!;
});
after(() => svc.stop());

/** The tenant's health alerts with this key, as its users see them on GET /api/v1/system-health. */
async function healthAlerts(t: Tenant, key: string, status: "open" | "resolved" = "open"): Promise<any[]> {
  const res = await rest(svc.baseUrl, "GET", `/api/v1/system-health?status=${status}`, { key: t.apiKey });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.alerts.filter((a: any) => a.key === key);
}

/** `count` decisions stored at `at`, each with `qualified` candidates of which `suppressed` were suppressed. */
async function insertDecisions(tenantId: string, count: number, row: { at: Date; empty?: boolean; qualified?: number; suppressed?: number }) {
  await svc.running.foundation.db.query(
    `INSERT INTO recommendations (tenant_id, id, customer_id, offers, qualified_count, suppressed_count, degraded_scoring, created_at)
     SELECT $1, gen_random_uuid(), 'bulk-' || g, $2::jsonb, $3, $4, false, $5 FROM generate_series(1, $6) AS g`,
    { bind: [tenantId, row.empty ? "[]" : JSON.stringify([{ rank: 1, offerId: randomUUID() }]), row.qualified ?? 4, row.suppressed ?? 0, row.at, count] },
  );
}

test("the monitor runs every 30 minutes in UTC, and on the tick route beside the alert evaluator", async () => {
  assert.deepEqual(monitor.schedule, { cron: "*/30 * * * *", timezone: "UTC" });
  assert.equal(monitor.route, "tick");
  assert.deepEqual(FUNNEL_THRESHOLDS, { suppression_rate: 0.8, empty_candidate_rate: 0.5 });
  const tick = await rest(svc.baseUrl, "POST", "/api/cron/tick", { bearer: CRON_SECRET });
  assert.equal(tick.status, 200, JSON.stringify(tick.body));
  const runs = new Map(tick.body.runs.map((r: any) => [r.job, r.status]));
  assert.equal(runs.get("alerts.decision-funnel"), "succeeded", JSON.stringify(tick.body.runs));
  assert.equal(runs.get("alerts.evaluate"), "succeeded", JSON.stringify(tick.body.runs));
});

test("raises funnel alerts over the thresholds, not below the minimum of decisions, and clears them on recovery", async () => {
  const sick = await svc.createTenant();
  const quietAfter = await svc.createTenant();
  const small = await svc.createTenant();
  const healthy = await svc.createTenant();
  const slot = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const inWindow = new Date(slot.getTime() - 10 * 60_000);
  // 60 decisions: 55 with all 4 candidates suppressed and nothing returned, 5 healthy.
  for (const t of [sick, quietAfter]) {
    await insertDecisions(t.tenantId, 55, { at: inWindow, empty: true, suppressed: 4 });
    await insertDecisions(t.tenantId, 5, { at: inWindow });
  }
  await insertDecisions(small.tenantId, MIN_DECISIONS - 1, { at: inWindow, empty: true, suppressed: 4 });
  await insertDecisions(healthy.tenantId, 80, { at: inWindow, suppressed: 1 });
  await insertDecisions(healthy.tenantId, 20, { at: inWindow, empty: true, suppressed: 4 });
  // Older than the window: would make `healthy` look sick if counted.
  await insertDecisions(healthy.tenantId, 500, { at: new Date(slot.getTime() - 45 * 60_000), empty: true, suppressed: 4 });

  await monitor.run(slot);
  const raised = new Map<Tenant, string>();
  for (const t of [sick, quietAfter]) {
    const [suppression, ...more] = await healthAlerts(t, "funnel:suppression_rate");
    assert.ok(suppression, "suppression_rate over 0.8 raises");
    assert.equal(more.length, 0);
    assert.equal(suppression.severity, "warning");
    assert.ok(Math.abs(suppression.details.value - 220 / 240) < 1e-9);
    assert.equal(suppression.details.decisions, 60);
    assert.match(suppression.message, /suppression_rate was 0\.917 over the last 30 minutes \(60 decisions\), above 0\.8/);
    const [empty] = await healthAlerts(t, "funnel:empty_candidate_rate");
    assert.ok(empty, "empty_candidate_rate over 0.5 raises");
    assert.ok(Math.abs(empty.details.value - 55 / 60) < 1e-9);
    raised.set(t, suppression.id);
  }
  assert.deepEqual(await healthAlerts(small, "funnel:suppression_rate"), [], "fewer than the minimum of decisions raises nothing");
  assert.deepEqual(await healthAlerts(healthy, "funnel:suppression_rate"), []);
  assert.deepEqual(await healthAlerts(healthy, "funnel:empty_candidate_rate"), []);

  await monitor.run(slot);
  const kept = await healthAlerts(sick, "funnel:suppression_rate");
  assert.deepEqual(kept.map((a) => a.id), [raised.get(sick)], "a repeated slot keeps the one open alert");

  // The next half hour: `sick` recovers with healthy traffic, `quietAfter` stops deciding.
  const next = new Date(slot.getTime() + 30 * 60_000);
  await insertDecisions(sick.tenantId, 60, { at: new Date(next.getTime() - 5 * 60_000) });
  await monitor.run(next);
  for (const t of [sick, quietAfter]) {
    assert.deepEqual(await healthAlerts(t, "funnel:suppression_rate"), [], "recovered or quiet: cleared");
    assert.deepEqual(await healthAlerts(t, "funnel:empty_candidate_rate"), []);
    const resolved = await healthAlerts(t, "funnel:suppression_rate", "resolved");
    assert.deepEqual(resolved.map((a) => a.id), [raised.get(t)], "the raised alert is resolved, not deleted");
  }
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { ALERT_TEST_CONFIG, createWebhookProvider } from "../support/alert-delivery.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { createTemplate } from "../support/report-fixtures.js";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";
import { newId } from "../../src/platform/ids.js";

/**
 * Report runs hold a lease (docs/reports.md, "Runs whose process stopped"): a run-now whose process
 * was killed is ended as failed by the sweep once its lease ran out; a scheduled one is left to its
 * slot's take-over for a day; a live run renews its lease and ends as it would have.
 */
// Renewed every 333 ms; the slow run below lasts four seconds, twelve renewals.
const LEASE_MS = 1000;
let svc: TestService;
let t: { tenantId: string; apiKey: string };
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
let sweep: ScheduledJob;

before(async () => {
  svc = await startTestService({ ...ALERT_TEST_CONFIG, runLeaseMs: LEASE_MS, outbound: { ...ALERT_TEST_CONFIG.outbound!, maxAttempts: 1, timeoutMs: 4000 } });
  t = await svc.createTenant("report-leases");
  receiver = await startHttpReceiver();
  sweep = svc.running.services.jobs.find((j) => j.name === "reports.expired-runs")!;
  assert.equal(sweep?.route, "tick");
});
after(async () => {
  await receiver.close();
  await svc.stop();
});

/** A run as a process that died left it: `running`, its lease run out `leaseAgo` ago (null: from before leases). */
async function leftRun(templateId: string, over: { triggeredBy: "manual" | "cron"; leaseAgo: string | null; startedAgo?: string }): Promise<string> {
  const id = newId();
  const scheduled = over.triggeredBy === "cron";
  await svc.sql(
    `INSERT INTO report_runs (tenant_id, id, template_id, schedule_id, slot, status, triggered_by, started_at, lease_until)
     VALUES ($1, $2, $3, $4, $5, 'running', $6, now() - $7::interval, now() - $8::interval)`,
    [t.tenantId, id, templateId, scheduled ? newId() : null, scheduled ? new Date() : null, over.triggeredBy, over.startedAgo ?? "1 minute", over.leaseAgo],
  );
  return id;
}

const statusOf = async (id: string) => (await svc.sql("SELECT status, error, completed_at FROM report_runs WHERE tenant_id = $1 AND id = $2", [t.tenantId, id]))[0];

test("the sweep ends a run-now whose lease ran out, a scheduled run no take-over came for in a day, and a run from before leases a day old; nothing else", async () => {
  const template = await createTemplate(svc, t.apiKey, { name: "Left behind" });
  const manual = await leftRun(template.id, { triggeredBy: "manual", leaseAgo: "1 second" });
  const scheduledRecent = await leftRun(template.id, { triggeredBy: "cron", leaseAgo: "1 minute" });
  const scheduledOld = await leftRun(template.id, { triggeredBy: "cron", leaseAgo: "25 hours", startedAgo: "26 hours" });
  const legacyOld = await leftRun(template.id, { triggeredBy: "manual", leaseAgo: null, startedAgo: "25 hours" });
  const legacyRecent = await leftRun(template.id, { triggeredBy: "manual", leaseAgo: null, startedAgo: "1 hour" });
  const live = await leftRun(template.id, { triggeredBy: "manual", leaseAgo: "-1 minute" });

  // Two sweeps at once, then a third: each run is ended once.
  await Promise.all([sweep.run(new Date()), sweep.run(new Date())]);
  const firstEnds = new Map<string, unknown>();
  for (const id of [manual, scheduledOld, legacyOld]) firstEnds.set(id, (await statusOf(id)).completed_at.getTime());
  await sweep.run(new Date());

  for (const id of [manual, scheduledOld, legacyOld]) {
    const run = await statusOf(id);
    assert.equal(run.status, "failed", id);
    assert.equal(run.error, "the process running it stopped before it finished (lease expired)");
    assert.equal(run.completed_at.getTime(), firstEnds.get(id), "ended once");
  }
  for (const id of [scheduledRecent, legacyRecent, live]) assert.equal((await statusOf(id)).status, "running", id);
  // The API reads the ended run as any failed one.
  const read = await rest(svc.baseUrl, "GET", `/api/v1/reports/runs/${manual}`, { key: t.apiKey });
  assert.equal(read.status, 200, JSON.stringify(read.body));
  assert.equal(read.body.status, "failed");
  assert.match(read.body.error, /lease expired/);
});

test("a live run-now longer than its lease renews it: sweeps meanwhile leave it alone, and it ends as it would have", async () => {
  // The delivery hangs until its 4 s timeout: four leases long.
  receiver.routes.set("/slow", { statuses: [200], hang: true });
  const provider = await createWebhookProvider(svc.baseUrl, t.apiKey, `${receiver.url}/slow`);
  const template = await createTemplate(svc, t.apiKey, { name: "Slow delivery", filters: { destinations: [provider] } });
  let done = false;
  const running = rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.id}/run-now`, { key: t.apiKey, body: {} }).finally(() => (done = true));
  let sweeps = 0;
  while (!done) {
    await sweep.run(new Date());
    sweeps++;
    await sleep(100);
  }
  const res = await running;
  assert.ok(sweeps >= 10, `swept ${sweeps} times during the run`);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, "failed", "its one destination did not answer");
  assert.match(res.body.deliveryResults[0].error, /no answer within 4000 ms/);
  const run = await statusOf(res.body.runId);
  assert.equal(run.error, null, "not the sweep's end");
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";
import { ALERT_TEST_CONFIG, createWebhookProvider } from "../support/alert-delivery.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { createTemplate } from "../support/report-fixtures.js";

/**
 * Schedule CRUD (spec 4.7), nextRunAt from croner, and `reports.due-schedules`: each due schedule's
 * slot runs once, however many processes tick and however many ticks see it due.
 */
const CRON_SECRET = "cron-secret-for-the-report-schedules-test";
let svc: TestService;
let child: ChildService;
let t: { tenantId: string; apiKey: string };
let theirs: { tenantId: string; apiKey: string };
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
let hook: string;

before(async () => {
  svc = await startTestService({ ...ALERT_TEST_CONFIG, cronSecret: CRON_SECRET });
  t = await svc.createTenant("reports-schedules");
  theirs = await svc.createTenant("reports-schedules-other");
  receiver = await startHttpReceiver();
  receiver.routes.set("/hook", { statuses: [200] });
  hook = await createWebhookProvider(svc.baseUrl, t.apiKey, `${receiver.url}/hook`);
  child = await startChildService(svc, { entry: "test/support/scheduler-child.ts", env: { CRON_SECRET, SCHEDULER: "off" } });
});
after(async () => {
  await child?.stop();
  await receiver.close();
  await svc?.stop();
});

const call = (method: string, path: string, key: string, body?: unknown) => rest(svc.baseUrl, method, path, { key, body: method === "GET" ? undefined : (body ?? {}) });
const schedule = (templateId: string, over: Record<string, unknown> = {}) => ({ templateId, name: "daily", cronExpression: "0 9 * * *", timezone: "Europe/Berlin", ...over });

test("create computes nextRunAt with croner in the schedule's zone; destinations default to the template's", async () => {
  const template = await createTemplate(svc, t.apiKey, { filters: { destinations: [hook] } });
  const res = await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id));
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.deepEqual(res.body.destinations, [hook]);
  assert.equal(res.body.enabled, true);
  assert.equal(res.body.lastRunAt, null);
  const next = new Date(res.body.nextRunAt);
  assert.ok(next > new Date() && next.getTime() - Date.now() <= 25 * 3600_000);
  const local = new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(next);
  assert.equal(local, "09:00");
  const got = await call("GET", `/api/v1/reports/schedules/${res.body.id}`, t.apiKey);
  assert.deepEqual(got.body, res.body);
  const list = await call("GET", `/api/v1/reports/schedules?templateId=${template.id}`, t.apiKey);
  assert.deepEqual(list.body.data.map((s: any) => s.id), [res.body.id]);
});

test("PATCH recomputes nextRunAt when the cron expression or zone changes, and only then", async () => {
  const template = await createTemplate(svc, t.apiKey);
  const created = (await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id))).body;
  const renamed = await call("PATCH", `/api/v1/reports/schedules/${created.id}`, t.apiKey, { name: "renamed" });
  assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
  assert.equal(renamed.body.nextRunAt, created.nextRunAt);
  assert.equal(renamed.body.cronExpression, "0 9 * * *");
  await svc.sql("UPDATE report_schedules SET next_run_at = '2030-01-01T00:00:00Z' WHERE tenant_id = $1 AND id = $2", [t.tenantId, created.id]);
  const moved = await call("PATCH", `/api/v1/reports/schedules/${created.id}`, t.apiKey, { timezone: "America/New_York" });
  const local = new Intl.DateTimeFormat("en-GB", { timeZone: "America/New_York", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(new Date(moved.body.nextRunAt));
  assert.equal(local, "09:00");
  assert.notEqual(moved.body.nextRunAt, "2030-01-01T00:00:00Z");
  const recron = await call("PATCH", `/api/v1/reports/schedules/${created.id}`, t.apiKey, { cronExpression: "*/15 * * * *" });
  assert.ok(new Date(recron.body.nextRunAt).getTime() - Date.now() <= 15 * 60_000);
});

test("404 for an unknown or foreign template, 422 for a bad cron expression, 400 for a bad zone and bad fields", async () => {
  const template = await createTemplate(svc, t.apiKey);
  const foreign = await createTemplate(svc, theirs.apiKey);
  const theirHook = await createWebhookProvider(svc.baseUrl, theirs.apiKey, `${receiver.url}/theirs`);
  assert.equal((await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(foreign.id))).status, 404);
  assert.equal((await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule("00000000-0000-4000-8000-000000000000"))).status, 404);
  for (const [over, reason, field, status] of [
    [{ cronExpression: "61 * * * *" }, "INVALID_CRON_EXPRESSION", "cronExpression", 422],
    [{ cronExpression: "0 0 30 2 *" }, "INVALID_CRON_EXPRESSION", "cronExpression", 422],
    [{ timezone: "Mars/Olympus" }, "INVALID_TIMEZONE", "timezone", 400],
    [{ timezone: "+02:00" }, "INVALID_TIMEZONE", "timezone", 400],
  ] as const) {
    const res = await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id, over));
    assert.equal(res.status, status, `${JSON.stringify(over)}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.reason, reason);
    assert.match(JSON.stringify(res.body), new RegExp(field));
  }
  const bad = await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id, { destinations: [theirHook], name: "" }));
  assert.equal(bad.status, 400, JSON.stringify(bad.body));
  assert.match(JSON.stringify(bad.body), /destinations\[0\]: unknown notification provider/);
  assert.match(JSON.stringify(bad.body), /name/);
  const created = (await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id))).body;
  const patch = await call("PATCH", `/api/v1/reports/schedules/${created.id}`, t.apiKey, { cronExpression: "nope" });
  assert.equal(patch.status, 422);
  for (const method of ["GET", "PATCH", "DELETE"]) assert.equal((await call(method, `/api/v1/reports/schedules/${created.id}`, theirs.apiKey, { name: "x" })).status, 404, method);
  assert.equal((await call("DELETE", `/api/v1/reports/schedules/${created.id}`, t.apiKey)).status, 204);
  assert.equal((await call("GET", `/api/v1/reports/schedules/${created.id}`, t.apiKey)).status, 404);
});

test("a due schedule runs once per slot across two processes ticking at once, as triggeredBy cron with its scheduleId", async () => {
  const template = await createTemplate(svc, t.apiKey, { name: "Scheduled", formats: ["csv"] });
  const created = (await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id, { destinations: [hook], cronExpression: "*/5 * * * *", timezone: "UTC" }))).body;
  const dueAt = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 5 * 60_000);
  await svc.sql("UPDATE report_schedules SET next_run_at = $3 WHERE tenant_id = $1 AND id = $2", [t.tenantId, created.id, dueAt]);
  const before = receiver.received.filter((r) => r.path === "/hook").length;
  const tick = (baseUrl: string) => rest(baseUrl, "POST", "/api/cron/tick", { bearer: CRON_SECRET });
  // Both processes' tick routes, and this process's scheduler driven for two other minutes besides.
  const scheduler = svc.running.services.scheduler;
  const results = await Promise.all([
    tick(svc.baseUrl), tick(child.baseUrl), tick(svc.baseUrl), tick(child.baseUrl),
    scheduler.runRoute("tick", new Date(Date.now() - 60_000)), scheduler.runRoute("tick", new Date(Date.now() - 120_000)),
  ]);
  for (const r of results.slice(0, 4) as { status: number }[]) assert.equal(r.status, 200);
  const runs = await svc.sql("SELECT * FROM report_runs WHERE tenant_id = $1 AND schedule_id = $2", [t.tenantId, created.id]);
  assert.equal(runs.length, 1, "one run for the slot");
  assert.equal(runs[0].triggered_by, "cron");
  assert.equal(runs[0].slot.getTime(), dueAt.getTime());
  assert.equal(runs[0].status, "completed", `run failed: ${runs[0].error} ${JSON.stringify(runs[0].delivery_results)}`);
  assert.equal(receiver.received.filter((r) => r.path === "/hook").length - before, 1, "delivered once");
  const claims = await svc.sql("SELECT status FROM scheduled_runs WHERE job_name = $1 AND slot = $2", [`reports.schedule:${created.id}`, dueAt]);
  assert.deepEqual(claims.map((c) => c.status), ["succeeded"]);
  const after = (await call("GET", `/api/v1/reports/schedules/${created.id}`, t.apiKey)).body;
  assert.equal(after.lastRunAt, dueAt.toISOString().replace(".000Z", "Z"));
  assert.ok(new Date(after.nextRunAt) > dueAt, "moved past the slot it ran");
  const listed = await call("GET", `/api/v1/reports/runs?templateId=${template.id}`, t.apiKey);
  assert.equal(listed.body.data[0].scheduleId, created.id);
  assert.equal(listed.body.data[0].triggeredBy, "cron");
  // Deleted: no process runs it again.
  await call("DELETE", `/api/v1/reports/schedules/${created.id}`, t.apiKey);
  await svc.sql("UPDATE report_schedules SET next_run_at = now() - interval '1 hour' WHERE tenant_id = $1", [t.tenantId]);
  await tick(child.baseUrl);
  assert.equal((await svc.sql("SELECT count(*)::int AS n FROM report_runs WHERE tenant_id = $1 AND schedule_id = $2", [t.tenantId, created.id]))[0].n, 1);
});

test("a slot whose run's process died is taken over: the run finishes under its id and the report is delivered", async () => {
  const template = await createTemplate(svc, t.apiKey, { name: "Interrupted", formats: ["csv"] });
  const created = (await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id, { destinations: [hook], cronExpression: "*/5 * * * *", timezone: "UTC" }))).body;
  const dueAt = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000);
  await svc.sql("UPDATE report_schedules SET next_run_at = $3 WHERE tenant_id = $1 AND id = $2", [t.tenantId, created.id, dueAt]);
  // What a process killed in the middle of the slot leaves: the run, running, and its claim, whose lease ran out.
  const runId = randomUUID();
  await svc.sql(
    `INSERT INTO report_runs (tenant_id, id, template_id, schedule_id, slot, status, triggered_by, started_at)
     VALUES ($1, $2, $3, $4, $5, 'running', 'cron', now() - interval '1 minute')`,
    [t.tenantId, runId, template.id, created.id, dueAt],
  );
  await svc.sql(
    `INSERT INTO scheduled_runs (job_name, slot, status, attempts, started_at, lease_until)
     VALUES ($1, $2, 'running', 1, now() - interval '1 minute', now() - interval '1 second')`,
    [`reports.schedule:${created.id}`, dueAt],
  );
  const ofRun = () => receiver.received.filter((r) => r.path === "/hook" && JSON.stringify(r.body).includes(runId)).length;
  await svc.running.services.scheduler.runRoute("tick", new Date(Date.now() - 7 * 60_000));
  const runs = await svc.sql("SELECT id, status, error FROM report_runs WHERE tenant_id = $1 AND schedule_id = $2", [t.tenantId, created.id]);
  assert.deepEqual(runs.map((r) => [r.id, r.status, r.error]), [[runId, "completed", null]]);
  assert.equal(ofRun(), 1, "delivered once");
  const claims = await svc.sql("SELECT status, attempts FROM scheduled_runs WHERE job_name = $1 AND slot = $2", [`reports.schedule:${created.id}`, dueAt]);
  assert.deepEqual(claims.map((c) => [c.status, c.attempts]), [["succeeded", 2]]);
});

test("across a daylight-saving change the next run keeps its local time: 09:00 Berlin is 08:00Z, then 07:00Z", async () => {
  const template = await createTemplate(svc, t.apiKey, { name: "DST", formats: ["markdown"] });
  const created = (await call("POST", "/api/v1/reports/schedules", t.apiKey, schedule(template.id))).body;
  // Saturday 28 March 2026, 09:00 CET; Berlin moves to CEST in the night that follows.
  const slot = new Date("2026-03-28T08:00:00Z");
  await svc.sql("UPDATE report_schedules SET next_run_at = $3 WHERE tenant_id = $1 AND id = $2", [t.tenantId, created.id, slot]);
  await svc.running.services.scheduler.runRoute("tick", new Date("2026-03-28T08:00:20Z"));
  const after = (await call("GET", `/api/v1/reports/schedules/${created.id}`, t.apiKey)).body;
  assert.equal(after.lastRunAt, "2026-03-28T08:00:00Z");
  assert.equal(after.nextRunAt, "2026-03-29T07:00:00Z");
  const run = await svc.sql("SELECT slot, triggered_by FROM report_runs WHERE tenant_id = $1 AND schedule_id = $2", [t.tenantId, created.id]);
  assert.deepEqual(run.map((r) => [r.slot.toISOString(), r.triggered_by]), [["2026-03-28T08:00:00.000Z", "cron"]]);
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { ALERT_TEST_CONFIG, createWebhookProvider, PROVIDER_SECRET } from "../support/alert-delivery.js";
import { startHttpReceiver, startSmtpServer } from "../support/outbound-receivers.js";
import { createTemplate, seedDecision, seedOffer } from "../support/report-fixtures.js";

/** Run-now with persistence and dispatch, the runs' reads and downloads, delivery through the one dispatcher. */
let svc: TestService;
let t: { tenantId: string; apiKey: string };
let theirs: { tenantId: string; apiKey: string };
let viewerKey: string;
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let mailProvider: string;
let goodHook: string;
let badHook: string;

before(async () => {
  svc = await startTestService(ALERT_TEST_CONFIG);
  t = await svc.createTenant("reports-runs");
  theirs = await svc.createTenant("reports-runs-other");
  viewerKey = (await svc.createUser(t.tenantId, "viewer")).apiKey;
  receiver = await startHttpReceiver();
  receiver.routes.set("/ok", { statuses: [200], secret: PROVIDER_SECRET });
  receiver.routes.set("/down", { statuses: [503] });
  smtp = await startSmtpServer("mailer", "smtp-secret-pass");
  goodHook = await createWebhookProvider(svc.baseUrl, t.apiKey, `${receiver.url}/ok`);
  badHook = await createWebhookProvider(svc.baseUrl, t.apiKey, `${receiver.url}/down`);
  const mail = await rest(svc.baseUrl, "POST", "/api/v1/notifications/providers", {
    key: t.apiKey,
    body: { type: "email", name: "mail", config: { host: "127.0.0.1", port: smtp.port, secure: false, user: "mailer", password: "smtp-secret-pass", from: "reports@acme.example", to: ["boss@acme.example"] } },
  });
  assert.equal(mail.status, 201, JSON.stringify(mail.body));
  mailProvider = mail.body.id;
  const offer = await seedOffer(svc, t.tenantId, "Gold card");
  await seedDecision(svc, t.tenantId, { at: "2026-03-02T10:00:00Z", offers: [{ offerId: offer }], qualified: 1, suppressed: 0, outcomes: [{ rank: 1, outcome: "click" }] });
});
after(async () => {
  await receiver.close();
  await smtp.close();
  await svc.stop();
});

const call = (method: string, path: string, key: string, body?: unknown) => rest(svc.baseUrl, method, path, { key, body: method === "GET" ? undefined : (body ?? {}) });
const PERIOD = { from: "2026-03-01", to: "2026-03-03" };

test("run-now answers 202 with the run id, artifact metadata and one delivery result per destination; a failing destination fails no other", async () => {
  const template = await createTemplate(svc, t.apiKey, {
    name: "Delivered",
    dataSources: [{ sourceKey: "offer_performance", params: PERIOD }],
    formats: ["pdf", "csv"],
    filters: { destinations: [mailProvider, goodHook, badHook] },
  });
  const res = await call("POST", `/api/v1/reports/templates/${template.id}/run-now`, t.apiKey);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, "partially_delivered");
  assert.deepEqual(res.body.artifacts.map((a: any) => [a.format, a.downloadPath]), [
    ["pdf", `/api/v1/reports/runs/${res.body.runId}/artifacts/pdf`],
    ["csv", `/api/v1/reports/runs/${res.body.runId}/artifacts/csv`],
  ]);
  const byProvider = Object.fromEntries(res.body.deliveryResults.map((d: any) => [d.providerId, d]));
  assert.equal(res.body.deliveryResults.length, 3);
  assert.equal(byProvider[mailProvider].ok, true, JSON.stringify(byProvider[mailProvider]));
  assert.equal(byProvider[goodHook].ok, true);
  assert.equal(byProvider[badHook].ok, false);
  assert.match(byProvider[badHook].error, /503/);

  // The e-mail carries both artifacts as attachments.
  const mail = smtp.mails.find((m) => m.subject === "Report: Delivered")!;
  assert.ok(mail, "mail received");
  assert.deepEqual(mail.attachments.map((a) => a.contentType).sort(), ["application/pdf", "text/csv"]);
  const pdf = mail.attachments.find((a) => a.contentType === "application/pdf")!;
  assert.equal(pdf.content.subarray(0, 5).toString(), "%PDF-");
  // The webhook is signed and carries the run's metadata, download paths and the small artifacts inline.
  const hook = receiver.received.find((r) => r.path === "/ok")!;
  assert.equal(hook.signatureValid, true);
  const payload = JSON.parse(hook.body);
  const body = payload.payload ?? payload;
  assert.equal(body.runId, res.body.runId);
  assert.equal(body.templateId, template.id);
  assert.equal(body.triggeredBy, "manual");
  const csv = body.artifacts.find((a: any) => a.format === "csv");
  assert.equal(csv.downloadPath, `/api/v1/reports/runs/${res.body.runId}/artifacts/csv`);
  assert.match(Buffer.from(csv.base64, "base64").toString("utf8"), /Gold card/);

  // The stored run says the same; its reads carry no payload.
  const run = await call("GET", `/api/v1/reports/runs/${res.body.runId}`, viewerKey);
  assert.equal(run.status, 200, JSON.stringify(run.body));
  assert.equal(run.body.status, "partially_delivered");
  assert.equal(run.body.triggeredBy, "manual");
  assert.equal(run.body.scheduleId, null);
  assert.ok(run.body.durationMs >= 0);
  assert.ok(run.body.completedAt);
  assert.deepEqual(run.body.deliveryResults, res.body.deliveryResults);
  assert.equal(run.body.sectionsData[0].rows[0][0], "Gold card");
  assert.equal(run.body.narrativeOutput, null);
  assert.equal(run.body.timeZone, "UTC");
  assert.ok(!JSON.stringify(run.body).includes("base64"));
});

test("download answers the file with its content type and attachment disposition; 404 for a format not rendered and across tenants", async () => {
  const template = await createTemplate(svc, t.apiKey, { name: "Files", dataSources: [{ sourceKey: "offer_performance", params: PERIOD }], formats: ["csv", "html"] });
  const runId = (await call("POST", `/api/v1/reports/templates/${template.id}/run-now`, t.apiKey)).body.runId;
  const res = await fetch(`${svc.baseUrl}/api/v1/reports/runs/${runId}/artifacts/csv`, { headers: { "x-api-key": viewerKey } });
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("content-type"), "text/csv; charset=utf-8");
  assert.match(res.headers.get("content-disposition") ?? "", /^attachment; filename="files-\d{4}-\d{2}-\d{2}\.csv"$/);
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.deepEqual([...bytes.subarray(0, 3)], [0xef, 0xbb, 0xbf]);
  assert.match(bytes.toString("utf8"), /Gold card/);
  assert.equal((await call("GET", `/api/v1/reports/runs/${runId}/artifacts/pdf`, t.apiKey)).status, 404);
  assert.equal((await call("GET", `/api/v1/reports/runs/${runId}/artifacts/docx`, t.apiKey)).status, 400);
  assert.equal((await call("GET", `/api/v1/reports/runs/${runId}/artifacts/csv`, theirs.apiKey)).status, 404);
  assert.equal((await call("GET", `/api/v1/reports/runs/${runId}`, theirs.apiKey)).status, 404);
  assert.equal((await call("GET", "/api/v1/reports/runs/not-a-uuid", t.apiKey)).status, 404);
});

test("runs page newest first with {data, pagination: {total, limit, offset}}; limit 1-200, default 50", async () => {
  const template = await createTemplate(svc, t.apiKey, { name: "Paged", dataSources: [{ sourceKey: "funnel", params: PERIOD }], formats: ["markdown"] });
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await call("POST", `/api/v1/reports/templates/${template.id}/run-now`, t.apiKey)).body.runId);
  const first = await call("GET", `/api/v1/reports/runs?templateId=${template.id}&limit=2`, viewerKey);
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.deepEqual(first.body.pagination, { total: 3, limit: 2, offset: 0 });
  assert.deepEqual(first.body.data.map((r: any) => r.id), [ids[2], ids[1]]);
  assert.equal(first.body.data[0].status, "completed");
  assert.deepEqual(first.body.data[0].deliveryResults, []);
  assert.equal(first.body.data[0].artifacts[0].format, "markdown");
  assert.equal(first.body.data[0].sectionsData, undefined, "lists carry no section data");
  const second = await call("GET", `/api/v1/reports/runs?templateId=${template.id}&limit=2&offset=2`, viewerKey);
  assert.deepEqual(second.body.data.map((r: any) => r.id), [ids[0]]);
  assert.deepEqual(second.body.pagination, { total: 3, limit: 2, offset: 2 });
  const all = await call("GET", "/api/v1/reports/runs", viewerKey);
  assert.equal(all.body.pagination.limit, 50);
  assert.ok(all.body.pagination.total >= 3);
  assert.equal((await call("GET", "/api/v1/reports/runs?limit=500", viewerKey)).body.pagination.limit, 200);
  for (const q of ["limit=0", "offset=-1"]) {
    const bad = await call("GET", `/api/v1/reports/runs?${q}`, viewerKey);
    assert.equal(bad.status, 400, `${q}: ${JSON.stringify(bad.body)}`);
    assert.match(JSON.stringify(bad.body), new RegExp(q.split("=")[0]));
  }
  const foreign = await call("GET", `/api/v1/reports/runs?templateId=${template.id}`, theirs.apiKey);
  assert.deepEqual(foreign.body.pagination.total, 0);
  // A filter is looked up, not parsed (docs/errors.md): a malformed one matches nothing, like an unknown one.
  const malformed = await call("GET", "/api/v1/reports/runs?templateId=nope", viewerKey);
  assert.equal(malformed.status, 200);
  assert.deepEqual([malformed.body.data, malformed.body.pagination.total], [[], 0]);
  const schedules = await call("GET", "/api/v1/reports/schedules?templateId=nope", viewerKey);
  assert.equal(schedules.status, 200);
  assert.deepEqual(schedules.body.data, []);
});

test("a report that cannot be computed ends failed with its reason, and nothing is sent", async () => {
  const template = await createTemplate(svc, t.apiKey, {
    name: "Broken",
    dataSources: [{ sourceKey: "experiment_results", params: { experimentId: "00000000-0000-4000-8000-000000000000" } }],
    formats: ["csv"],
    filters: { destinations: [goodHook] },
  });
  const before = receiver.received.length;
  const res = await call("POST", `/api/v1/reports/templates/${template.id}/run-now`, t.apiKey);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, "failed");
  assert.match(res.body.error, /unknown experiment/);
  assert.deepEqual(res.body.artifacts, []);
  assert.equal(receiver.received.length, before);
});

test("viewers preview; a workspace reset deletes the tenant's templates, schedules, runs and artifacts", async () => {
  const other = await svc.createTenant("reports-reset");
  const template = await createTemplate(svc, other.apiKey, { dataSources: [{ sourceKey: "funnel", params: PERIOD }] });
  const viewer = (await svc.createUser(other.tenantId, "viewer")).apiKey;
  assert.equal((await call("POST", `/api/v1/reports/templates/${template.id}/preview`, viewer)).status, 200);
  await call("POST", "/api/v1/reports/schedules", other.apiKey, { templateId: template.id, name: "s", cronExpression: "@daily", timezone: "UTC" });
  const runId = (await call("POST", `/api/v1/reports/templates/${template.id}/run-now`, other.apiKey)).body.runId;
  const reset = await call("POST", "/api/v1/workspace/reset", other.apiKey, { confirm: other.tenantId });
  assert.equal(reset.status, 200, JSON.stringify(reset.body));
  for (const table of ["report_templates", "report_schedules", "report_runs", "report_artifacts"]) {
    assert.equal((await svc.sql(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [other.tenantId]))[0].n, 0, table);
  }
  assert.equal((await call("GET", `/api/v1/reports/runs/${runId}`, other.apiKey)).status, 404);
  assert.ok((await svc.sql("SELECT count(*)::int AS n FROM report_runs WHERE tenant_id = $1", [t.tenantId]))[0].n > 0, "other tenants keep theirs");
});

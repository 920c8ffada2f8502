import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { ReportService } from "../../gen/decisioning/v1/reports_pb.js";
import type { TestService } from "../support/service.js";
import { connectClient, rest } from "../support/clients.js";
import { startTwoTenantsWithProviders } from "../support/alert-delivery.js";
import { createTemplate, templateBody } from "../support/report-fixtures.js";

let svc: TestService;
let mine: { tenantId: string; apiKey: string };
let theirs: { tenantId: string; apiKey: string };
let viewerKey: string;
let myProvider: string;
let theirProvider: string;

before(async () => {
  ({ svc, mine, theirs, viewerKey, myProvider, theirProvider } = await startTwoTenantsWithProviders());
});
after(() => svc.stop());

const call = (method: string, path: string, key: string, body?: unknown) =>
  rest(svc.baseUrl, method, path, { key, body: method === "GET" ? undefined : (body ?? {}) });

test("the data-source registry lists every source with its parameters, defaults and columns", async () => {
  const res = await call("GET", "/api/v1/reports/data-sources", viewerKey);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const keys = res.body.data.map((s: any) => s.key);
  assert.deepEqual(keys, ["offer_performance", "decision_volume", "channel_performance", "experiment_results", "funnel", "alert_history"]);
  const offers = res.body.data[0];
  const days = offers.parameters.find((p: any) => p.name === "days");
  assert.deepEqual({ type: days.type, default: days.default, required: days.required }, { type: "integer", default: 7, required: false });
  assert.equal(offers.parameters.find((p: any) => p.name === "timezone").default, "UTC");
  assert.deepEqual(offers.columns.find((c: any) => c.name === "ctr"), { name: "ctr", type: "percent", unit: "%" });
  const experiment = res.body.data.find((s: any) => s.key === "experiment_results");
  assert.deepEqual(experiment.parameters.map((p: any) => [p.name, p.required]), [["experimentId", true]]);
});

test("create answers 201 with defaults; read, list newest first; viewers read but do not write", async () => {
  const a = await createTemplate(svc, mine.apiKey, { name: "first" });
  const b = await createTemplate(svc, mine.apiKey, {
    name: "second",
    formats: ["pdf", "html"],
    narrative: { enabled: true, prompt: "Focus on CTR" },
    filters: { destinations: [myProvider] },
  });
  assert.equal(a.enabled, true);
  assert.deepEqual(a.narrative, { enabled: false, prompt: "" });
  assert.deepEqual(a.filters, { destinations: [] });
  assert.deepEqual(a.dataSources, [{ sourceKey: "offer_performance", params: { days: 7 } }]);
  assert.deepEqual(b.filters.destinations, [myProvider]);
  assert.deepEqual(b.narrative, { enabled: true, prompt: "Focus on CTR" });
  const got = await call("GET", `/api/v1/reports/templates/${a.id}`, viewerKey);
  assert.deepEqual(got.body, a);
  const list = await call("GET", "/api/v1/reports/templates", viewerKey);
  assert.equal(list.status, 200);
  const ids = list.body.data.map((t: any) => t.id);
  assert.ok(ids.indexOf(b.id) < ids.indexOf(a.id), "newest first");
  const viaConnect = await connectClient(ReportService, svc.baseUrl).getReportTemplate({ id: b.id }, { headers: { "x-api-key": viewerKey } });
  assert.deepEqual(viaConnect.formats, ["pdf", "html"]);
  for (const [method, path] of [["POST", "/api/v1/reports/templates"], ["PATCH", `/api/v1/reports/templates/${a.id}`], ["DELETE", `/api/v1/reports/templates/${a.id}`], ["POST", `/api/v1/reports/templates/${a.id}/run-now`]]) {
    const res = await call(method, path, viewerKey, templateBody());
    assert.equal(res.status, 403, `${method} ${path}: ${JSON.stringify(res.body)}`);
  }
  const audit = await svc.sql("SELECT action FROM audit_log WHERE tenant_id = $1 AND entity_type = 'report_template' AND entity_id = $2", [mine.tenantId, a.id]);
  assert.deepEqual(audit.map((r) => r.action), ["create"]);
});

test("PATCH changes only what it is sent; a new dataSources list is checked against the sections kept", async () => {
  const t = await createTemplate(svc, mine.apiKey, {
    dataSources: [{ sourceKey: "offer_performance", params: {} }, { sourceKey: "funnel", params: { days: 3 } }],
    sections: [{ id: "a", title: "A", dataSourceIndex: 0 }, { id: "b", title: "B", dataSourceIndex: 1 }],
  });
  const res = await call("PATCH", `/api/v1/reports/templates/${t.id}`, mine.apiKey, { name: "renamed", narrative: { enabled: true } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.name, "renamed");
  assert.deepEqual(res.body.narrative, { enabled: true, prompt: "" });
  assert.deepEqual(res.body.sections, t.sections);
  assert.deepEqual(res.body.formats, t.formats);
  assert.equal(res.body.description, t.description);
  const orphan = await call("PATCH", `/api/v1/reports/templates/${t.id}`, mine.apiKey, { dataSources: [{ sourceKey: "funnel" }] });
  assert.equal(orphan.status, 400, JSON.stringify(orphan.body));
  assert.match(JSON.stringify(orphan.body), /sections\[1\]\.dataSourceIndex/);
  assert.equal((await call("GET", `/api/v1/reports/templates/${t.id}`, mine.apiKey)).body.dataSources.length, 2, "nothing written");
});

test("bad input is a 400 naming the field, and nothing is written", async () => {
  const before = (await svc.sql("SELECT count(*)::int AS n FROM report_templates WHERE tenant_id = $1", [mine.tenantId]))[0].n;
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ dataSources: [{ sourceKey: "nope" }] }, /dataSources\[0\]\.sourceKey/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { days: "seven" } }] }, /dataSources\[0\]\.params\.days: must be an integer/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { days: 0 } }] }, /dataSources\[0\]\.params\.days/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { colour: "red" } }] }, /dataSources\[0\]\.params\.colour/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { timezone: "Mars/Olympus" } }] }, /dataSources\[0\]\.params\.timezone/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { from: "2026-03-01" } }] }, /dataSources\[0\]\.params\.to/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { from: "2026-03-05", to: "2026-03-01" } }] }, /dataSources\[0\]\.params\.to: must be after from/],
    [{ dataSources: [{ sourceKey: "offer_performance", params: { from: "2026-03-01T00:00:00", to: "2026-03-02" } }] }, /dataSources\[0\]\.params\.from/],
    [{ dataSources: [{ sourceKey: "experiment_results", params: {} }] }, /dataSources\[0\]\.params\.experimentId: is required/],
    [{ sections: [{ id: "s", title: "S", dataSourceIndex: 3 }] }, /sections\[0\]\.dataSourceIndex/],
    [{ sections: [{ id: "s", title: "S", dataSourceIndex: 0 }, { id: "s", title: "T", dataSourceIndex: 0 }] }, /sections\[1\]\.id/],
    [{ formats: ["pdf", "docx"] }, /formats\[1\]: must be one of pdf, csv, markdown, html/],
    [{ filters: { destinations: [theirProvider] } }, /filters\.destinations\[0\]: unknown notification provider/],
    [{ filters: { destinations: ["not-a-uuid"] } }, /filters\.destinations\[0\]/],
    [{ name: "" }, /name/],
    [{ narrative: { enabled: "yes" } }, /narrative\.enabled/],
  ];
  for (const [over, field] of cases) {
    const res = await call("POST", "/api/v1/reports/templates", mine.apiKey, templateBody(over));
    assert.equal(res.status, 400, `${JSON.stringify(over)}: ${JSON.stringify(res.body)}`);
    assert.match(JSON.stringify(res.body), field, JSON.stringify(over));
  }
  // Refused data sources are the error; a section's index into them is not reported beside it.
  for (const dataSources of [[], [{ sourceKey: "nope" }]]) {
    const res = await call("POST", "/api/v1/reports/templates", mine.apiKey, templateBody({ dataSources }));
    assert.equal(res.status, 400);
    assert.doesNotMatch(JSON.stringify(res.body), /dataSourceIndex/, JSON.stringify(res.body));
  }
  const missing = await call("POST", "/api/v1/reports/templates", mine.apiKey, { name: "x" });
  assert.equal(missing.status, 400);
  for (const field of ["dataSources", "sections", "formats"]) assert.match(JSON.stringify(missing.body), new RegExp(field));
  const after = (await svc.sql("SELECT count(*)::int AS n FROM report_templates WHERE tenant_id = $1", [mine.tenantId]))[0].n;
  assert.equal(after, before);
});

test("another tenant's template is 404 on every route; DELETE answers 204 and takes the schedules with it", async () => {
  const t = await createTemplate(svc, mine.apiKey);
  for (const [method, path] of [
    ["GET", `/api/v1/reports/templates/${t.id}`],
    ["PATCH", `/api/v1/reports/templates/${t.id}`],
    ["DELETE", `/api/v1/reports/templates/${t.id}`],
    ["POST", `/api/v1/reports/templates/${t.id}/preview`],
    ["POST", `/api/v1/reports/templates/${t.id}/run-now`],
    ["GET", "/api/v1/reports/templates/not-a-uuid"],
  ]) {
    const res = await call(method, path, theirs.apiKey, { name: "x" });
    assert.equal(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
  }
  const schedule = await call("POST", "/api/v1/reports/schedules", mine.apiKey, { templateId: t.id, name: "daily", cronExpression: "0 6 * * *", timezone: "UTC" });
  assert.equal(schedule.status, 201, JSON.stringify(schedule.body));
  const del = await call("DELETE", `/api/v1/reports/templates/${t.id}`, mine.apiKey);
  assert.equal(del.status, 204);
  assert.equal((await call("GET", `/api/v1/reports/templates/${t.id}`, mine.apiKey)).status, 404);
  assert.equal((await call("GET", `/api/v1/reports/schedules/${schedule.body.id}`, mine.apiKey)).status, 404);
  assert.equal((await svc.sql("SELECT count(*)::int AS n FROM report_schedules WHERE tenant_id = $1 AND template_id = $2", [mine.tenantId, t.id]))[0].n, 0);
});

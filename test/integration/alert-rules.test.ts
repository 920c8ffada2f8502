import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { AlertRuleService } from "../../gen/decisioning/v1/alerts_pb.js";
import type { TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { startTwoTenantsWithProviders } from "../support/alert-delivery.js";

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
const valid = () => ({
  name: "Low acceptance",
  metric: "acceptance_rate",
  operator: "lt",
  threshold: 0.05,
  channels: [myProvider, { providerId: myProvider }, { type: "webhook", target: "https://hooks.example.com/a" }, { type: "email", target: "ops@example.com" }],
});

test("create answers 201 with the spec's defaults and the channels as written, mixed shapes and all", async () => {
  const res = await call("POST", "/api/v1/alerts", mine.apiKey, valid());
  assert.equal(res.status, 201, JSON.stringify(res.body));
  assert.equal(res.body.windowMinutes, 5);
  assert.equal(res.body.cooldownMinutes, 60);
  assert.equal(res.body.enabled, true);
  assert.equal(res.body.status, "ok");
  assert.equal(res.body.lastFiredAt, null);
  assert.equal(res.body.tenantId, mine.tenantId);
  assert.deepEqual(res.body.channels, valid().channels);
  const got = await call("GET", `/api/v1/alerts/${res.body.id}`, viewerKey);
  assert.equal(got.status, 200);
  assert.deepEqual(got.body, res.body);
});

test("GET /alerts is a bare array on REST, the message on Connect; viewers read, only editors write", async () => {
  const created = (await call("POST", "/api/v1/alerts", mine.apiKey, { ...valid(), name: "listed" })).body;
  const list = await call("GET", "/api/v1/alerts", viewerKey);
  assert.equal(list.status, 200);
  assert.ok(Array.isArray(list.body), JSON.stringify(list.body));
  assert.ok(list.body.some((r: any) => r.id === created.id && r.name === "listed"));
  const client = connectClient(AlertRuleService, svc.baseUrl);
  const viaConnect = await client.listAlertRules({}, { headers: { "x-api-key": viewerKey } });
  assert.ok(viaConnect.data.some((r) => r.id === created.id));
  const viaGrpc = await grpcClient(AlertRuleService, svc.grpcAddress).getAlertRule({ id: created.id }, { headers: { "x-api-key": viewerKey } });
  assert.equal(viaGrpc.name, "listed");
  assert.equal(viaGrpc.channels?.values.length, valid().channels.length);
  for (const [method, path, body] of [["POST", "/api/v1/alerts", valid()], ["PUT", `/api/v1/alerts/${created.id}`, { name: "x" }], ["DELETE", `/api/v1/alerts/${created.id}`]] as const) {
    const res = await call(method, path, viewerKey, body);
    assert.equal(res.status, 403, `${method}: ${JSON.stringify(res.body)}`);
    assert.equal(res.body.reason, "INSUFFICIENT_ROLE", JSON.stringify(res.body));
  }
  assert.equal((await call("GET", `/api/v1/alerts/${created.id}`, mine.apiKey)).body.name, "listed");
});

test("PUT changes only what it is sent; a metric it does not recognize is accepted and unsupported at once", async () => {
  const created = (await call("POST", "/api/v1/alerts", mine.apiKey, { ...valid(), windowMinutes: 15, enabled: false })).body;
  const res = await call("PUT", `/api/v1/alerts/${created.id}`, mine.apiKey, { threshold: 0.1 });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.threshold, 0.1);
  assert.equal(res.body.windowMinutes, 15);
  assert.equal(res.body.enabled, false);
  assert.equal(res.body.name, created.name);
  assert.deepEqual(res.body.channels, created.channels);
  const custom = await call("PUT", `/api/v1/alerts/${created.id}`, mine.apiKey, { metric: "queue_depth", channels: [{ type: "email", target: "a@b.co" }] });
  assert.equal(custom.status, 200);
  assert.equal(custom.body.metric, "queue_depth");
  assert.equal(custom.body.status, "unsupported_metric");
  assert.deepEqual(custom.body.channels, [{ type: "email", target: "a@b.co" }]);
});

test("DELETE is 204 and the rule is gone; every write is in the audit log with snapshots", async () => {
  const created = (await call("POST", "/api/v1/alerts", mine.apiKey, { ...valid(), name: "doomed" })).body;
  await call("PUT", `/api/v1/alerts/${created.id}`, mine.apiKey, { name: "doomed twice" });
  const del = await call("DELETE", `/api/v1/alerts/${created.id}`, mine.apiKey);
  assert.equal(del.status, 204);
  assert.equal((await call("GET", `/api/v1/alerts/${created.id}`, mine.apiKey)).status, 404);
  const logs = await call("GET", "/api/v1/audit-logs?entityType=alert_rule&limit=100", mine.apiKey);
  const mineLogs = logs.body.logs.filter((l: any) => l.entityId === created.id);
  assert.deepEqual(mineLogs.map((l: any) => l.action).sort(), ["create", "delete", "update"]);
  const update = mineLogs.find((l: any) => l.action === "update");
  assert.equal(update.before.name, "doomed");
  assert.equal(update.after.name, "doomed twice");
  assert.equal((await call("GET", "/api/v1/audit-logs/verify", mine.apiKey)).body.intact, true);
});

test("bad input is 400 naming the field, and nothing is written", async () => {
  const count = async () => (await svc.running.foundation.db.query("SELECT count(*)::int AS n FROM alert_rules WHERE tenant_id = $1", { bind: [mine.tenantId] }))[0] as Array<{ n: number }>;
  const before = (await count())[0].n;
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ ...valid(), operator: "above" }, /operator/],
    [{ ...valid(), threshold: "high" }, /threshold/],
    [{ ...valid(), threshold: "NaN" }, /threshold/],
    [{ ...valid(), threshold: undefined }, /threshold: is required/],
    [{ ...valid(), name: "" }, /name/],
    [{ ...valid(), metric: undefined }, /metric: is required/],
    [{ ...valid(), channels: undefined }, /channels: is required/],
    [{ ...valid(), channels: [] }, /channels: must name at least one/],
    [{ ...valid(), channels: ["not-a-uuid"] }, /channels\[0\]/],
    [{ ...valid(), channels: [{ providerId: 7 }] }, /channels\[0\]\.providerId/],
    [{ ...valid(), channels: [{ type: "sms", target: "+100" }] }, /channels\[0\]\.type/],
    [{ ...valid(), channels: [{ type: "webhook", target: "ftp://x" }] }, /channels\[0\]\.target/],
    [{ ...valid(), channels: [{ type: "email", target: "nobody" }] }, /channels\[0\]\.target/],
    [{ ...valid(), channels: "everyone" }, /channels/],
    [{ ...valid(), windowMinutes: 0 }, /windowMinutes/],
    [{ ...valid(), cooldownMinutes: -1 }, /cooldownMinutes/],
    [{ ...valid(), channels: [myProvider, theirProvider] }, /channels\[1\]: unknown notification provider/],
    [{ ...valid(), channels: [{ providerId: randomUUID() }] }, /channels\[0\]\.providerId: unknown notification provider/],
  ];
  for (const [body, field] of cases) {
    const res = await call("POST", "/api/v1/alerts", mine.apiKey, body);
    assert.equal(res.status, 400, `${JSON.stringify(body)} → ${res.status} ${JSON.stringify(res.body)}`);
    assert.match(res.body.detail ?? JSON.stringify(res.body), field, JSON.stringify(res.body));
  }
  const created = (await call("POST", "/api/v1/alerts", mine.apiKey, valid())).body;
  const put = await call("PUT", `/api/v1/alerts/${created.id}`, mine.apiKey, { operator: "between", name: "renamed" });
  assert.equal(put.status, 400);
  assert.match(put.body.detail, /operator/);
  assert.equal((await call("GET", `/api/v1/alerts/${created.id}`, mine.apiKey)).body.name, valid().name, "a refused update changes nothing");
  assert.equal((await count())[0].n, before + 1);
  const viaConnect = await rpcError(
    connectClient(AlertRuleService, svc.baseUrl).createAlertRule({ ...valid(), operator: "above", channels: undefined }, { headers: { "x-api-key": mine.apiKey } }),
  );
  assert.equal(viaConnect.reason, "VALIDATION_FAILED");
  assert.match(viaConnect.message, /operator/);
});

test("another tenant's rule is 404 on every route and unchanged; its providers are not ours to name", async () => {
  const created = (await call("POST", "/api/v1/alerts", mine.apiKey, { ...valid(), name: "private" })).body;
  for (const [method, body] of [["GET"], ["PUT", { name: "hijacked" }], ["DELETE"]] as Array<[string, unknown?]>) {
    const res = await call(method, `/api/v1/alerts/${created.id}`, theirs.apiKey, body);
    assert.equal(res.status, 404, `${method}: ${JSON.stringify(res.body)}`);
  }
  assert.equal((await call("GET", "/api/v1/alerts/not-a-uuid", mine.apiKey)).status, 404);
  assert.ok(!(await call("GET", "/api/v1/alerts", theirs.apiKey)).body.some((r: any) => r.id === created.id));
  assert.equal((await call("GET", `/api/v1/alerts/${created.id}`, mine.apiKey)).body.name, "private");
  const foreign = await call("PUT", `/api/v1/alerts/${created.id}`, mine.apiKey, { channels: [theirProvider] });
  assert.equal(foreign.status, 400);
  assert.match(foreign.body.detail, /channels\[0\]: unknown notification provider/);
});

test("a workspace reset deletes the workspace's alert rules, and only its own", async () => {
  await call("POST", "/api/v1/alerts", mine.apiKey, valid());
  const theirRule = (await call("POST", "/api/v1/alerts", theirs.apiKey, { ...valid(), channels: [theirProvider] })).body;
  const reset = await call("POST", "/api/v1/workspace/reset", mine.apiKey, { confirm: mine.tenantId });
  assert.equal(reset.status, 200, JSON.stringify(reset.body));
  assert.deepEqual((await call("GET", "/api/v1/alerts", mine.apiKey)).body, []);
  assert.equal((await call("GET", `/api/v1/alerts/${theirRule.id}`, theirs.apiKey)).status, 200);
});

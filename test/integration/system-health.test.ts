import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { SystemHealthService } from "../../gen/decisioning/v1/observability_pb.js";
import type { HealthAlerts } from "../../src/observability/operational-signals.js";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";

let svc: TestService;
let healthAlerts: HealthAlerts;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let admin: Tenant;
let other: Tenant;

const get = (path: string, key = admin.apiKey) => rest(svc.baseUrl, "GET", path, { key });

async function sql(query: string, bind: unknown[] = []): Promise<any[]> {
  const [rows] = await svc.running.foundation.db.query(query, { bind });
  return rows as any[];
}

before(async () => {
  svc = await startTestService();
  healthAlerts = svc.running.services.observability.healthAlerts;
  admin = await svc.createTenant();
  other = await svc.createTenant("other");
});
after(() => svc.stop());

describe("health alerts (HealthAlerts port)", () => {
  test("raise opens one alert per key; raising again updates it; clear resolves it; a later raise opens a new one", async () => {
    const t = await svc.createTenant();
    await healthAlerts.raise(t.tenantId, { key: "funnel:suppression_rate", severity: "warning", message: "suppression at 85%", details: { rate: 0.85 } });
    const [first] = (await get("/api/v1/system-health", t.apiKey)).body.alerts;
    assert.equal(first.key, "funnel:suppression_rate");
    assert.equal(first.severity, "warning");
    assert.equal(first.status, "open");
    assert.deepEqual(first.details, { rate: 0.85 });
    assert.equal(first.resolvedAt, null);

    await healthAlerts.raise(t.tenantId, { key: "funnel:suppression_rate", severity: "error", message: "suppression at 95%", details: { rate: 0.95 } });
    const again = (await get("/api/v1/system-health", t.apiKey)).body.alerts;
    assert.equal(again.length, 1, "raising an open alert again does not add one");
    assert.equal(again[0].id, first.id);
    assert.equal(again[0].severity, "error");
    assert.equal(again[0].message, "suppression at 95%");
    assert.deepEqual(again[0].details, { rate: 0.95 });
    assert.equal(again[0].raisedAt, first.raisedAt);
    // As instants: RFC 3339 text leaves out a zero fraction, so "…:05Z" sorts after "…:05.123Z".
    assert.ok(Date.parse(again[0].updatedAt) >= Date.parse(first.updatedAt), `${again[0].updatedAt} >= ${first.updatedAt}`);

    await healthAlerts.clear(t.tenantId, "funnel:suppression_rate");
    await healthAlerts.clear(t.tenantId, "funnel:suppression_rate"); // nothing open: no effect, no error
    assert.deepEqual((await get("/api/v1/system-health", t.apiKey)).body.alerts, []);
    const resolved = (await get("/api/v1/system-health?status=resolved", t.apiKey)).body.alerts;
    assert.equal(resolved.length, 1);
    assert.equal(resolved[0].id, first.id);
    assert.equal(resolved[0].status, "resolved");
    assert.ok(resolved[0].resolvedAt);

    await healthAlerts.raise(t.tenantId, { key: "funnel:suppression_rate", severity: "warning", message: "back again" });
    const all = (await get("/api/v1/system-health?status=all", t.apiKey)).body.alerts;
    assert.deepEqual(all.map((a: any) => a.status), ["open", "resolved"], "most recently updated first");
    assert.notEqual(all[0].id, first.id);
    assert.deepEqual(all[0].details, {});
  });

  test("concurrent raises of one key leave exactly one open alert", async () => {
    const t = await svc.createTenant();
    await Promise.all(
      Array.from({ length: 12 }, (_, i) => healthAlerts.raise(t.tenantId, { key: "pipeline:p1", severity: "error", message: `run ${i} failed` })),
    );
    const rows = await sql("SELECT status FROM health_alerts WHERE tenant_id = $1 AND key = 'pipeline:p1'", [t.tenantId]);
    assert.deepEqual(rows, [{ status: "open" }]);
  });

  test("a malformed alert is refused naming its fields, and nothing is stored", async () => {
    const t = await svc.createTenant();
    await assert.rejects(
      healthAlerts.raise(t.tenantId, { key: "", severity: "fatal" as never, message: "" }),
      (err: any) => err.code === "INVALID_ARGUMENT" && /key: .*; severity: must be one of info, warning, error; message: is required/.test(err.message),
    );
    assert.deepEqual(await sql("SELECT id FROM health_alerts WHERE tenant_id = $1", [t.tenantId]), []);
  });
});

describe("GET /api/v1/system-health", () => {
  test("the same alerts on REST, Connect (JSON and binary) and gRPC", async () => {
    await healthAlerts.raise(admin.tenantId, { key: "doors", severity: "info", message: "seen on every door", details: { n: 1 } });
    const viaRest = (await get("/api/v1/system-health")).body.alerts.find((a: any) => a.key === "doors");
    const headers = { "x-api-key": admin.apiKey };
    for (const client of [
      connectClient(SystemHealthService, svc.baseUrl),
      connectClient(SystemHealthService, svc.baseUrl, true),
      grpcClient(SystemHealthService, svc.grpcAddress),
    ]) {
      const res = await client.listHealthAlerts({}, { headers });
      const alert = res.alerts.find((a) => a.key === "doors")!;
      assert.equal(alert.id, viaRest.id);
      assert.equal(alert.message, "seen on every door");
      assert.deepEqual(alert.details, { n: 1 });
      assert.equal(alert.status, "open");
    }
  });

  test("tenants never see each other's alerts", async () => {
    await healthAlerts.raise(other.tenantId, { key: "only-other", severity: "error", message: "other tenant's" });
    const mine = await get("/api/v1/system-health?status=all");
    assert.ok(!mine.body.alerts.some((a: any) => a.key === "only-other"));
    const theirs = await get("/api/v1/system-health", other.apiKey);
    assert.deepEqual(theirs.body.alerts.map((a: any) => a.key), ["only-other"]);
  });

  test("any user of the tenant may read it; a data-plane key may not; no credential is 401", async () => {
    const viewer = await svc.createUser(admin.tenantId, "viewer");
    assert.equal((await get("/api/v1/system-health", viewer.apiKey)).status, 200);
    const dataKey = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: admin.apiKey, body: { name: "sdk" } });
    assert.equal(dataKey.status, 201);
    const forbidden = await get("/api/v1/system-health", dataKey.body.key);
    assert.equal(forbidden.status, 403);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/system-health")).status, 401);
  });

  test("bad query values are a 400 naming the field, on every door", async () => {
    const status = await get("/api/v1/system-health?status=closed");
    assert.equal(status.status, 400);
    assert.match(status.body.detail, /^status: must be one of open, resolved, all$/);
    const limit = await get("/api/v1/system-health?limit=0");
    assert.equal(limit.status, 400);
    assert.match(limit.body.detail, /^limit: must be a whole number of at least 1$/);
    assert.equal((await get("/api/v1/system-health?limit=101")).status, 200, "over the maximum is served at the maximum");
    const headers = { "x-api-key": admin.apiKey };
    const viaConnect = await rpcError(connectClient(SystemHealthService, svc.baseUrl).listHealthAlerts({ status: "closed" }, { headers }));
    assert.equal(viaConnect.code, Code.InvalidArgument);
    assert.match(viaConnect.message, /^status: /);
    const viaGrpc = await rpcError(grpcClient(SystemHealthService, svc.grpcAddress).listHealthAlerts({ limit: 0 }, { headers }));
    assert.equal(viaGrpc.code, Code.InvalidArgument);
    assert.match(viaGrpc.message, /^limit: /);
  });

  test("a workspace reset deletes the tenant's health alerts, and only its own", async () => {
    const t = await svc.createTenant();
    await healthAlerts.raise(t.tenantId, { key: "pipeline:x:failed", severity: "error", message: "failed" });
    await healthAlerts.raise(other.tenantId, { key: "kept", severity: "info", message: "kept" });
    const reset = await rest(svc.baseUrl, "POST", "/api/v1/workspace/reset", { key: t.apiKey, body: { confirm: t.tenantId } });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.deepEqual((await get("/api/v1/system-health?status=all", t.apiKey)).body.alerts, []);
    const kept = (await get("/api/v1/system-health", other.apiKey)).body.alerts;
    assert.ok(kept.some((a: { key: string }) => a.key === "kept"));
  });

  test("limit bounds the list, most recently updated first", async () => {
    const t = await svc.createTenant();
    for (const key of ["a", "b", "c"]) await healthAlerts.raise(t.tenantId, { key, severity: "info", message: key });
    const res = await get("/api/v1/system-health?limit=2", t.apiKey);
    assert.deepEqual(res.body.alerts.map((a: any) => a.key), ["c", "b"]);
  });
});

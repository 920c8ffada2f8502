import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { SystemHealthService } from "../../gen/decisioning/v1/observability_pb.js";
import { loadConfig } from "../../src/config.js";
import { Metrics } from "../../src/observability/metrics.js";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest } from "../support/clients.js";
import { sampleValue } from "../support/prometheus.js";

const HEALTH = "decisioning.v1.SystemHealthService/ListHealthAlerts";
const RECOMMEND = "decisioning.v1.DecisionService/Recommend";

let svc: TestService;

async function scrape(port: number, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/metrics`, { headers });
}

async function dataKey(apiKey: string): Promise<string> {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: apiKey, body: { name: "sdk" } });
  assert.equal(res.status, 201);
  return res.body.key;
}

before(async () => {
  svc = await startTestService({ metricsPort: 0 });
});
after(() => svc.stop());

describe("GET /metrics", () => {
  test("requests by door, method and status, with duration histograms; decisions; pools; Redis; scheduler runs", async () => {
    const t = await svc.createTenant();
    const offer = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name: "metered", status: "active" } });
    assert.equal(offer.status, 201);
    const empty = await svc.createTenant();
    const withOffers = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: await dataKey(t.apiKey), body: { customerId: "c1" } });
    assert.equal(withOffers.body.offers.length, 1);
    const none = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: empty.apiKey, body: { customerId: "c1" } });
    assert.deepEqual(none.body.offers, []);

    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/system-health", { key: t.apiKey })).status, 200);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/system-health?limit=0", { key: t.apiKey })).status, 400);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/system-health")).status, 401);
    const headers = { "x-api-key": t.apiKey };
    await connectClient(SystemHealthService, svc.baseUrl).listHealthAlerts({}, { headers });
    await grpcClient(SystemHealthService, svc.grpcAddress).listHealthAlerts({}, { headers });
    await grpcClient(SystemHealthService, svc.grpcAddress).listHealthAlerts({ status: "bad" }, { headers }).catch(() => {});
    svc.running.services.observability.metrics.recordSchedulerRun("alerts.evaluate", "ok", 120);

    const res = await scrape(svc.running.metricsPort!);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const value = (name: string, labels: Record<string, string> = {}) => sampleValue(text, name, labels);

    const requests = (door: string, method: string, status: number) => value("decisioning_requests_total", { door, method, status: String(status) });
    assert.equal(requests("rest", HEALTH, 200), 1);
    assert.equal(requests("rest", HEALTH, 400), 1);
    assert.equal(requests("rest", HEALTH, 401), 1);
    assert.equal(requests("connect", HEALTH, 200), 1);
    assert.equal(requests("grpc", HEALTH, 200), 1);
    assert.equal(requests("grpc", HEALTH, 400), 1, "gRPC failures are labelled with the status REST would answer");
    assert.equal(requests("rest", RECOMMEND, 200), 2);
    assert.equal(requests("rest", "decisioning.v1.OfferService/CreateOffer", 201), 1, "REST success statuses as the policy declares them");

    const histogram = { door: "rest", method: RECOMMEND, status: "200" };
    assert.equal(value("decisioning_request_duration_seconds_count", histogram), 2);
    assert.equal(value("decisioning_request_duration_seconds_bucket", { ...histogram, le: "+Inf" }), 2);
    assert.ok(value("decisioning_request_duration_seconds_sum", histogram)! > 0);
    assert.equal(value("decisioning_request_duration_seconds_bucket", { ...histogram, le: "10" }), 2);

    assert.equal(value("decisioning_decisions_total", { result: "offers" }), 1);
    assert.equal(value("decisioning_decisions_total", { result: "empty" }), 1);
    assert.equal(value("decisioning_scoring_degraded_total"), 0);
    assert.equal(value("decisioning_scoring_pool_queue_size"), 0);
    assert.equal(value("decisioning_scoring_pool_threads"), 0, "no task was expensive enough for a worker");
    assert.equal(value("decisioning_trace_queue_length"), 0);
    assert.equal(value("decisioning_traces_dropped_total"), 0);
    assert.equal(value("decisioning_db_pool_max"), 10);
    const size = value("decisioning_db_pool_size")!;
    assert.ok(size >= 1 && size <= 10, `connections open: ${size}`);
    assert.ok(value("decisioning_db_pool_available")! <= size);
    assert.equal(value("decisioning_db_pool_waiting"), 0);
    assert.equal(value("decisioning_redis_errors_total"), 0);
    assert.equal(value("decisioning_scheduler_runs_total", { job: "alerts.evaluate", outcome: "ok" }), 1);
    assert.equal(value("decisioning_scheduler_run_duration_seconds_bucket", { job: "alerts.evaluate", outcome: "ok", le: "0.5" }), 1);
    assert.equal(value("decisioning_scheduler_run_duration_seconds_bucket", { job: "alerts.evaluate", outcome: "ok", le: "0.1" }), 0);
    assert.ok(value("process_cpu_user_seconds_total")! > 0, "the default process metrics are there too");
  });

  test("only GET /metrics is served on the metrics port", async () => {
    const port = svc.running.metricsPort!;
    assert.equal((await fetch(`http://127.0.0.1:${port}/`)).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`, { method: "POST" })).status, 405);
    assert.notEqual(port, svc.running.httpPort);
    const onApiPort = await fetch(`${svc.baseUrl}/metrics`);
    assert.equal(onApiPort.status, 404, "the API port does not expose metrics");
  });

  test("METRICS_TOKEN: a scrape without the bearer token, or with another, is 401", async () => {
    const guarded = await startTestService({ metricsPort: 0, metricsToken: "scrape-token-0123456789" }, svc.config.databaseUrl!);
    try {
      const port = guarded.running.metricsPort!;
      const missing = await scrape(port);
      assert.equal(missing.status, 401);
      assert.match(missing.headers.get("www-authenticate")!, /^Bearer/);
      assert.doesNotMatch(await missing.text(), /decisioning_/);
      assert.equal((await scrape(port, { authorization: "Bearer scrape-token-012345678" })).status, 401);
      assert.equal((await scrape(port, { authorization: "Basic scrape-token-0123456789" })).status, 401);
      const ok = await scrape(port, { authorization: "Bearer scrape-token-0123456789" });
      assert.equal(ok.status, 200);
      assert.match(await ok.text(), /^# HELP decisioning_requests_total /m);
    } finally {
      await guarded.stop();
    }
  });

  test("off unless METRICS_PORT is set", async () => {
    assert.equal(loadConfig({}).metricsPort, null);
    assert.equal(loadConfig({ METRICS_PORT: "9464" }).metricsPort, 9464);
    assert.throws(() => loadConfig({ METRICS_PORT: "http" }), /METRICS_PORT must be a port number/);
    const plain = await startTestService({}, svc.config.databaseUrl!);
    try {
      assert.equal(plain.config.metricsPort, null);
      assert.equal(plain.running.metricsPort, null);
    } finally {
      await plain.stop();
    }
  });
});

describe("Metrics", () => {
  test("a degraded decision counts as made and as degraded; an empty one as empty", async () => {
    const metrics = new Metrics();
    metrics.decided(0, true);
    metrics.decided(2, false);
    const text = await metrics.render();
    assert.equal(sampleValue(text, "decisioning_scoring_degraded_total"), 1);
    assert.equal(sampleValue(text, "decisioning_decisions_total", { result: "empty" }), 1);
    assert.equal(sampleValue(text, "decisioning_decisions_total", { result: "offers" }), 1);
  });
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { grpcClient, rest } from "../support/clients.js";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.js";
import { freePort } from "../../src/platform/embedded-postgres.js";
import { pino } from "pino";

let redis: PrivateRedis;
let svc: TestService;
let tenant: { tenantId: string; userId: string; apiKey: string };
/** What the service logged at warn and above. */
const logged: Array<Record<string, any>> = [];

before(async () => {
  redis = await startPrivateRedis();
  const logger = pino({ level: "warn" }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  svc = await startTestService({ redisUrl: redis.url }, undefined, logger);
  tenant = await svc.createTenant();
});
after(async () => {
  await svc.stop();
  await redis.stop().catch(() => {});
});

/** Every answer below must come fast: a dead Redis fails commands at once instead of queueing them. */
async function timed<T>(p: Promise<T>): Promise<T> {
  const started = Date.now();
  const result = await p;
  assert.ok(Date.now() - started < 1500, `took ${Date.now() - started} ms`);
  return result;
}

test("start-up with an unreachable Redis fails at once with a clear message", async () => {
  const closedPort = await freePort();
  await assert.rejects(timed(startTestService({ redisUrl: `redis://127.0.0.1:${closedPort}` })), /Redis at REDIS_URL is unreachable/);
});

test("with Redis down: /healthz is 503, the token endpoint fails closed, other routes go on, revocation still bites here", async () => {
  const client = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { name: "etl" } });
  const credentials = { grant_type: "client_credentials", client_id: client.body.clientId, client_secret: client.body.clientSecret };
  const doomed = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "doomed", scopes: ["control-plane"] } });
  assert.equal((await rest(svc.baseUrl, "GET", "/healthz")).status, 200);
  assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: credentials })).status, 200);
  assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: doomed.body.key })).status, 200, "the key is now cached");
  assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: tenant.apiKey, body: { name: "on", status: "active" } })).status, 201);
  const dataKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "sdk" } })).body.key;
  assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId: "c" } })).status, 200);
  await svc.running.services.decisions.traces.flush();
  const grpcHealth = grpcClient(Health, svc.grpcAddress);
  assert.equal((await grpcHealth.check({})).status, HealthCheckResponse_ServingStatus.SERVING);

  await redis.stop();

  const decision = await timed(rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId: "c" } }));
  assert.equal(decision.status, 503, "caps and budgets cannot be honoured without their counters: fail closed");
  assert.equal(decision.body.error.code, "SERVICE_UNAVAILABLE");
  assert.equal(decision.headers.get("x-error-reason"), "COUNTERS_UNAVAILABLE");
  assert.equal(decision.body.error.message, "Counters are temporarily unavailable; try again shortly", "Redis's own words stay in the log");
  assert.doesNotMatch(JSON.stringify(decision.body), /ECONNREFUSED|127\.0\.0\.1|:\d{4,5}\b|redis|lua|connection/i);
  const requestId = decision.headers.get("x-request-id");
  const cause = logged.find((l) => l.requestId === requestId);
  assert.ok(cause, `the failure is logged under request id ${requestId}`);
  assert.equal(cause.err.reason, "COUNTERS_UNAVAILABLE");
  assert.notEqual(cause.err.message, decision.body.error.message, "the log has what the answer hides");
  assert.match(cause.err.message, /^Counters are temporarily unavailable; try again shortly: ./);
  const rec = (await rest(svc.baseUrl, "GET", "/api/v1/decision-traces?customerId=c", { key: tenant.apiKey })).body;
  const outcome = await timed(rest(svc.baseUrl, "POST", "/api/v1/respond", {
    key: dataKey,
    body: { customerId: "c", outcome: "click", idempotencyKey: "during-outage", recommendationId: rec.data[0].recommendationId, rank: 1 },
  }));
  assert.equal(outcome.status, 200, "the outcome is recorded even though it cannot be learned");
  assert.equal(outcome.body.status, "recorded");
  const notServing = Date.now() + 6_000;
  while ((await grpcHealth.check({})).status !== HealthCheckResponse_ServingStatus.NOT_SERVING) {
    assert.ok(Date.now() < notServing, "gRPC health follows /healthz");
    await new Promise((r) => setTimeout(r, 200));
  }

  const health = await timed(rest(svc.baseUrl, "GET", "/healthz"));
  assert.equal(health.status, 503);
  assert.deepEqual(health.body.checks, { database: "ok", redis: "down" });

  const token = await timed(rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: credentials }));
  assert.equal(token.status, 503);
  assert.equal(token.body.error, "temporarily_unavailable");
  assert.ok(Number(token.headers.get("retry-after")) > 0);

  const list = await timed(rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey }));
  assert.equal(list.status, 200, "limiters other than the token endpoint's let requests through");
  assert.equal(list.headers.get("x-ratelimit-limit"), null, "no limit was counted");

  const revoked = await timed(rest(svc.baseUrl, "DELETE", `/api/v1/api-keys?id=${doomed.body.id}`, { key: tenant.apiKey, body: {} }));
  assert.equal(revoked.status, 204, "the revocation is committed even though it cannot be broadcast");
  assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: doomed.body.key })).status, 401);

  await redis.start();
  const deadline = Date.now() + 10_000;
  while ((await rest(svc.baseUrl, "GET", "/healthz")).status !== 200) {
    assert.ok(Date.now() < deadline, "the service reconnects when Redis is back");
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: credentials })).status, 200);
});

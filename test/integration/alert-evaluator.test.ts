import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";
import type { RecordingRequestStats } from "../../src/observability/request-stats.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.js";
import { ALERT_TEST_CONFIG, PROVIDER_SECRET, createWebhookProvider } from "../support/alert-delivery.js";

type Tenant = { tenantId: string; apiKey: string };

// A Redis of this file's own: the last test takes it away to make the request statistics unreadable.
let redis: PrivateRedis;
let svc: TestService;
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
let requestStats: RecordingRequestStats;
let evaluate: ScheduledJob;
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

before(async () => {
  redis = await startPrivateRedis();
  svc = await startTestService({ ...ALERT_TEST_CONFIG, redisUrl: redis.url });
  receiver = await startHttpReceiver();
  receiver.routes.set("/ops", { statuses: [200] });
  requestStats = svc.running.services.observability.requestStats;
  evaluate = svc.running.services.jobs.find((j) => j.name === "alerts.evaluate")!;
});
after(async () => {
  await svc.stop();
  await receiver.close();
  await redis.stop().catch(() => {});
});

async function post(path: string, body: unknown, key: string) {
  const res = await rest(svc.baseUrl, "POST", path, { key, body });
  assert.ok(res.status < 300, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function sql(query: string, bind: unknown[] = []): Promise<any[]> {
  return (await svc.running.foundation.db.query(query, { bind }))[0] as any[];
}

const opsHook = () => ({ type: "webhook" as const, target: `${receiver.url}/ops` });

async function rule(t: Tenant, body: Record<string, unknown>): Promise<any> {
  return post("/api/v1/alerts", { name: unique("rule"), channels: [opsHook()], ...body }, t.apiKey);
}

async function stored(t: Tenant, id: string): Promise<any> {
  return (await rest(svc.baseUrl, "GET", `/api/v1/alerts/${id}`, { key: t.apiKey })).body;
}

/**
 * The rule's alerts that a destination accepted, oldest first: the dispatcher's delivery row (its
 * dedupeKey, destination and tenant) with the webhook body the receiver got under that delivery's id.
 */
async function sentFor(ruleId: string): Promise<Array<{ tenantId: string; dedupeKey: string; destination: unknown; payload: any }>> {
  const rows = await sql(
    `SELECT tenant_id, id, dedupe_key, destination FROM notification_deliveries
     WHERE kind = 'alert' AND dedupe_key LIKE $1 AND status = 'accepted' ORDER BY created_at, dedupe_key`,
    [`alert:${ruleId}:%`],
  );
  return rows.map((r) => {
    const request = receiver.received.find((x) => x.headers["x-webhook-id"] === r.id);
    assert.ok(request, `delivery ${r.id} reached the receiver`);
    return { tenantId: r.tenant_id, dedupeKey: r.dedupe_key, destination: r.destination, payload: JSON.parse(request.body) };
  });
}

/** Every request the receiver got for the rule, accepted or not: what "sent twice" would show. */
const requestsFor = (ruleId: string) => receiver.received.filter((r) => JSON.parse(r.body).rule?.id === ruleId);

/** Requests that reached the service as the gateway records them, into the shared statistics (Redis). */
async function recordRequests(tenantId: string, count: number, at: Date, durationMs: number, status = 200): Promise<void> {
  for (let i = 0; i < count; i++) requestStats.record(tenantId, durationMs, status, at.getTime());
  await requestStats.flush();
}

/** Decisions written straight into the real table, where volume or a state the API cannot easily reach matters. */
async function insertDecisions(tenantId: string, count: number, row: { at: Date; empty?: boolean; degraded?: boolean; qualified?: number; suppressed?: number }) {
  await sql(
    `INSERT INTO recommendations (tenant_id, id, customer_id, offers, qualified_count, suppressed_count, degraded_scoring, created_at)
     SELECT $1, gen_random_uuid(), 'bulk-' || g, $2::jsonb, $3, $4, $5, $6 FROM generate_series(1, $7) AS g`,
    [tenantId, row.empty ? "[]" : JSON.stringify([{ rank: 1, offerId: randomUUID() }]), row.qualified ?? 1, row.suppressed ?? 0, row.degraded ?? false, row.at, count],
  );
}

describe("decision metrics from real Recommend and Respond calls", () => {
  let t: Tenant;
  let slot: Date;
  const rules: Record<string, any> = {};

  before(async () => {
    t = await svc.createTenant();
    const offers = [];
    for (const priority of [90, 80, 70, 10]) offers.push(await post("/api/v1/offers", { name: unique("offer"), status: "active", priority }, t.apiKey));
    await post("/api/v1/qualification-rules", {
      name: "adults only",
      config: { condition: { attribute: "customer.age", op: "gte", value: 18 }, appliesTo: { offerIds: [offers[3].id] } },
    }, t.apiKey);
    await post("/api/v1/contact-policies", { name: "once a day", config: { scope: "offer", maxImpressions: 1, windowSeconds: 86400 } }, t.apiKey);
    const key = (await post("/api/v1/api-keys", { name: "sdk" }, t.apiKey)).key;
    // Three offers qualify (the fourth is for adults); the first decision returns them, the second
    // finds all three capped: 6 qualified, 3 suppressed, one empty decision, 3 impressions.
    const first = await post("/api/v1/recommend", { customerId: "kid", attributes: { age: 10 } }, key);
    assert.equal(first.offers.length, 3);
    const second = await post("/api/v1/recommend", { customerId: "kid", attributes: { age: 10 } }, key);
    assert.equal(second.offers.length, 0);
    const respond = (rank: number, outcome: string, extra = {}) =>
      post("/api/v1/respond", { customerId: "kid", recommendationId: first.recommendationId, rank, outcome, idempotencyKey: randomUUID(), ...extra }, key);
    await respond(1, "click");
    await respond(2, "conversion", { conversionValue: 120 });
    await respond(3, "dismiss");
    // A second click and a conversion on the first offer: it was clicked and accepted once.
    await respond(1, "click");
    await respond(1, "conversion", { conversionValue: 0 });
    slot = new Date(Date.now() + 1000);

    const stored = await sql("SELECT qualified_count, suppressed_count, degraded_scoring FROM recommendations WHERE tenant_id = $1 ORDER BY created_at", [t.tenantId]);
    assert.deepEqual(stored, [
      { qualified_count: 3, suppressed_count: 0, degraded_scoring: false },
      { qualified_count: 3, suppressed_count: 3, degraded_scoring: false },
    ], "Recommend stores each decision's funnel figures");

    rules.acceptance = await rule(t, { metric: "acceptance_rate", operator: "gt", threshold: 0.6 });
    rules.ctr = await rule(t, { metric: "ctr", operator: "gte", threshold: 0.3 });
    rules.revenue = await rule(t, { metric: "revenue", operator: "gte", threshold: 100 });
    rules.selection = await rule(t, { metric: "selection_frequency", operator: "eq", threshold: 0.5 });
    rules.empty = await rule(t, { metric: "empty_candidate_rate", operator: "gte", threshold: 0.5 });
    rules.suppression = await rule(t, { metric: "suppression_rate", operator: "gt", threshold: 0.4 });
    rules.quiet = await rule(t, { metric: "acceptance_rate", operator: "lt", threshold: 0.5 });
    rules.undegraded = await rule(t, { metric: "degraded_scoring_rate", operator: "gt", threshold: 0 });
    rules.unknown = await rule(t, { metric: "queue_depth", operator: "gt", threshold: 0 });
    rules.disabled = await rule(t, { metric: "revenue", operator: "gt", threshold: 0, enabled: false });
    await evaluate.run(slot);
  });

  const expected: Array<[string, number]> = [
    ["acceptance", 2 / 3],
    ["ctr", 1 / 3],
    ["revenue", 120],
    ["selection", 1 / 2],
    ["empty", 1 / 2],
    ["suppression", 3 / 6],
  ];
  for (const [name, value] of expected) {
    test(`${name}: crosses its threshold, fires once with the measured value, and records lastFiredAt`, async () => {
      const r = await stored(t, rules[name].id);
      assert.equal(r.status, "fired");
      assert.equal(new Date(r.lastFiredAt).getTime(), slot.getTime());
      const sent = await sentFor(r.id);
      assert.equal(sent.length, 1);
      assert.ok(Math.abs(sent[0].payload.value - value) < 1e-9, `${name}: ${sent[0].payload.value}`);
      assert.equal(sent[0].dedupeKey, `alert:${r.id}:${slot.toISOString()}`);
      assert.deepEqual(sent[0].destination, opsHook());
      assert.equal(sent[0].tenantId, t.tenantId);
      assert.equal(sent[0].payload.tenantId, t.tenantId);
      assert.equal(requestsFor(r.id).length, 1);
    });
  }

  test("ok when the metric does not cross, unsupported_metric for a name it does not know, disabled rules untouched", async () => {
    for (const name of ["quiet", "undegraded"]) {
      assert.equal((await stored(t, rules[name].id)).status, "ok", name);
      assert.equal(requestsFor(rules[name].id).length, 0);
    }
    const unknown = await stored(t, rules.unknown.id);
    assert.equal(unknown.status, "unsupported_metric");
    assert.equal(unknown.lastFiredAt, null);
    assert.equal(requestsFor(rules.unknown.id).length, 0);
    assert.equal(requestsFor(rules.disabled.id).length, 0);
    const [disabled] = await sql("SELECT last_evaluated_at FROM alert_rules WHERE tenant_id = $1 AND id = $2", [t.tenantId, rules.disabled.id]);
    assert.equal(disabled.last_evaluated_at, null);
  });

  test("running the same slot again sends nothing and changes no status", async () => {
    const before = receiver.received.length;
    const statuses = await sql("SELECT id, status, last_fired_at FROM alert_rules WHERE tenant_id = $1 ORDER BY id", [t.tenantId]);
    await evaluate.run(slot);
    assert.equal(receiver.received.length, before);
    assert.deepEqual(await sql("SELECT id, status, last_fired_at FROM alert_rules WHERE tenant_id = $1 ORDER BY id", [t.tenantId]), statuses);
  });
});

describe("metrics without a convenient API path", () => {
  test("degraded_scoring_rate counts only the window's decisions", async () => {
    const t = await svc.createTenant();
    const now = Date.now();
    await insertDecisions(t.tenantId, 7, { at: new Date(now - 60_000) });
    await insertDecisions(t.tenantId, 3, { at: new Date(now - 60_000), degraded: true });
    await insertDecisions(t.tenantId, 20, { at: new Date(now - 10 * 60_000), degraded: true }); // before the 5-minute window
    const r = await rule(t, { metric: "degraded_scoring_rate", operator: "gt", threshold: 0.25 });
    await evaluate.run(new Date(now));
    assert.equal((await stored(t, r.id)).status, "fired");
    assert.equal((await sentFor(r.id))[0].payload.value, 0.3);
  });

  test("latency_p99 and http_5xx_count come from the shared request statistics", async () => {
    const t = await svc.createTenant();
    const other = await svc.createTenant();
    // A slot ten minutes ago: the test's own calls to the service (now) stay out of its window.
    const slot = new Date(Date.now() - 10 * 60_000);
    const at = (agoMs: number) => new Date(slot.getTime() - agoMs);
    await recordRequests(t.tenantId, 100, at(30_000), 40);
    await recordRequests(t.tenantId, 1, at(20_000), 900, 503);
    await recordRequests(t.tenantId, 1, at(20_000), 950, 500);
    await recordRequests(t.tenantId, 50, at(8 * 60_000), 5000, 500); // before the 5-minute window
    await recordRequests(other.tenantId, 10, at(20_000), 5000, 500);
    const latency = await rule(t, { metric: "latency_p99", operator: "gt", threshold: 500 });
    const errors = await rule(t, { metric: "http_5xx_count", operator: "gte", threshold: 2 });
    const fewErrors = await rule(t, { metric: "http_5xx_count", operator: "gt", threshold: 2 });
    await evaluate.run(slot);
    assert.equal((await stored(t, latency.id)).status, "fired");
    // The 99th percentile of 102 requests (rank 100.98) falls in the (800, 1000] ms bucket that
    // holds the two slow ones, interpolated: 800 + 200 × 0.98 / 2.
    const p99 = (await sentFor(latency.id))[0].payload.value;
    assert.ok(Math.abs(p99 - 898) < 1e-6, `p99 ${p99}`);
    assert.equal((await stored(t, errors.id)).status, "fired");
    assert.equal((await sentFor(errors.id))[0].payload.value, 2, "another tenant's errors and older ones do not count");
    assert.equal((await stored(t, fewErrors.id)).status, "ok");
  });
});

describe("cooldown and delivery", () => {
  test("inside cooldownMinutes after lastFiredAt a triggered rule is in cooldown and sends nothing; after it, it fires again", async () => {
    const t = await svc.createTenant();
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    const r = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5, cooldownMinutes: 2 });
    await evaluate.run(slot);
    assert.equal((await stored(t, r.id)).status, "fired");
    const firedAt = (await stored(t, r.id)).lastFiredAt;
    await evaluate.run(new Date(slot.getTime() + 60_000));
    const cooling = await stored(t, r.id);
    assert.equal(cooling.status, "cooldown");
    assert.equal(cooling.lastFiredAt, firedAt);
    assert.equal(requestsFor(r.id).length, 1);
    const later = new Date(slot.getTime() + 120_000);
    await evaluate.run(later);
    assert.equal((await stored(t, r.id)).status, "fired");
    assert.deepEqual((await sentFor(r.id)).map((s) => s.dedupeKey), [`alert:${r.id}:${slot.toISOString()}`, `alert:${r.id}:${later.toISOString()}`]);
  });

  test("every destination failing is delivery_failed without a cooldown; one accepting of two is fired", async () => {
    const t = await svc.createTenant();
    const hookPath = `/down-${t.tenantId}`;
    const providerPath = `/provider-${t.tenantId}`;
    receiver.routes.set(hookPath, { statuses: [500] });
    receiver.routes.set(providerPath, { statuses: [500], secret: PROVIDER_SECRET });
    const provider = await createWebhookProvider(svc.baseUrl, t.apiKey, `${receiver.url}${providerPath}`);
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    const hook = { type: "webhook" as const, target: `${receiver.url}${hookPath}` };
    const both = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5, channels: [hook, provider] });
    await evaluate.run(slot);
    const failed = await stored(t, both.id);
    assert.equal(failed.status, "delivery_failed");
    assert.equal(failed.lastFiredAt, null);
    assert.deepEqual(await sentFor(both.id), []);
    const attempts = await sql(
      "SELECT destination, status, attempts FROM notification_deliveries WHERE tenant_id = $1 AND dedupe_key = $2 ORDER BY destination_key",
      [t.tenantId, `alert:${both.id}:${slot.toISOString()}`],
    );
    assert.deepEqual(attempts, [
      { destination: { providerId: provider }, status: "failed", attempts: 2 },
      { destination: hook, status: "failed", attempts: 2 },
    ], "each destination was tried OUTBOUND_MAX_ATTEMPTS times");

    receiver.routes.set(providerPath, { statuses: [200], secret: PROVIDER_SECRET });
    const next = new Date(slot.getTime() + 60_000);
    await evaluate.run(next);
    const fired = await stored(t, both.id);
    assert.equal(fired.status, "fired", "a failed delivery starts no cooldown");
    assert.deepEqual((await sentFor(both.id)).map((s) => s.destination), [{ providerId: provider }]);
    const signed = receiver.received.filter((r) => r.path === providerPath);
    assert.ok(signed.length > 0 && signed.every((r) => r.signatureValid), "the provider's deliveries are signed with its secret");
  });

  test("an alert that reached nobody and that the redelivery sweep delivers later fires at its slot: cooldown from there", async () => {
    const t = await svc.createTenant();
    const path = `/late-${t.tenantId}`;
    receiver.routes.set(path, { statuses: [500] });
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    const r = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5, cooldownMinutes: 30, channels: [{ type: "webhook", target: `${receiver.url}${path}` }] });
    await evaluate.run(slot);
    assert.equal((await stored(t, r.id)).status, "delivery_failed");
    // As a process that died mid-series leaves it: unfinished, its lease run out, its message kept.
    await sql("UPDATE notification_deliveries SET status = 'sending', lease_until = now() - interval '1 second' WHERE tenant_id = $1 AND dedupe_key = $2", [t.tenantId, `alert:${r.id}:${slot.toISOString()}`]);
    await sql(
      `INSERT INTO outbound_messages (tenant_id, dedupe_key, message) VALUES ($1, $2, $3)`,
      [t.tenantId, `alert:${r.id}:${slot.toISOString()}`, JSON.stringify({ kind: "alert", subject: "s", text: "t", payload: { rule: { id: r.id } }, attachments: [] })],
    );
    receiver.routes.set(path, { statuses: [200] });
    assert.equal(await svc.running.services.notifications.dispatcher.redeliverOrphaned(50), 1);
    const late = await stored(t, r.id);
    assert.equal(late.status, "fired");
    assert.equal(late.lastFiredAt, slot.toISOString());
    await evaluate.run(new Date(slot.getTime() + 60_000));
    assert.equal((await stored(t, r.id)).status, "cooldown", "the next slot is inside the cooldown the late delivery started");
  });

  test("a slot retried after it dispatched but before it recorded sends again under the same dedupeKey", async () => {
    const t = await svc.createTenant();
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    const r = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5 });
    await evaluate.run(slot);
    // As if the process had stopped between the dispatch and the record.
    await sql("UPDATE alert_rules SET status = 'ok', last_fired_at = NULL, last_evaluated_at = NULL WHERE tenant_id = $1 AND id = $2", [t.tenantId, r.id]);
    await evaluate.run(slot);
    assert.equal((await stored(t, r.id)).status, "fired");
    assert.equal((await sentFor(r.id)).length, 1);
    assert.equal(requestsFor(r.id).length, 1, "the dispatcher saw the same dedupeKey and sent nothing twice");
  });
});

describe("request statistics unavailable", () => {
  test("a rule whose metric cannot be read fails the run after the others and is evaluated by the retry", async () => {
    const t = await svc.createTenant();
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    const latency = await rule(t, { metric: "latency_p99", operator: "gt", threshold: 1000 });
    const empty = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5 });
    await redis.stop();
    try {
      await assert.rejects(evaluate.run(slot), /alert rules were not evaluated/);
    } finally {
      await redis.start();
    }
    for (let i = 0; (await svc.running.foundation.redis!.ping().catch(() => null)) !== "PONG"; i++) {
      assert.ok(i < 100, "Redis answers the service again");
      await sleep(100);
    }
    assert.equal((await stored(t, empty.id)).status, "fired", "the other rules were evaluated");
    assert.equal(requestsFor(latency.id).length, 0);
    // The outage took the statistics with it (this Redis keeps nothing on disk): a slow request arrives again.
    await recordRequests(t.tenantId, 1, new Date(slot.getTime() - 30_000), 2000);
    await evaluate.run(slot);
    assert.equal((await stored(t, latency.id)).status, "fired");
    assert.equal(requestsFor(empty.id).length, 1);
  });
});

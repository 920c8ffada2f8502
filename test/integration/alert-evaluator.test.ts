import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { createTestOperations, type TestOperations } from "../support/operations.js";

type Tenant = { tenantId: string; apiKey: string };

let svc: TestService;
let ops: TestOperations;
let evaluate: ScheduledJob;
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

before(async () => {
  ops = createTestOperations();
  svc = await startTestService({}, undefined, undefined, ops);
  evaluate = svc.running.services.jobs.find((j) => j.name === "alerts.evaluate")!;
});
after(() => svc.stop());

async function post(path: string, body: unknown, key: string) {
  const res = await rest(svc.baseUrl, "POST", path, { key, body });
  assert.ok(res.status < 300, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function sql(query: string, bind: unknown[] = []): Promise<any[]> {
  return (await svc.running.foundation.db.query(query, { bind }))[0] as any[];
}

async function rule(t: Tenant, body: Record<string, unknown>): Promise<any> {
  return post("/api/v1/alerts", { name: unique("rule"), channels: [{ type: "webhook", target: "https://hooks.example.com/ops" }], ...body }, t.apiKey);
}

async function stored(t: Tenant, id: string): Promise<any> {
  return (await rest(svc.baseUrl, "GET", `/api/v1/alerts/${id}`, { key: t.apiKey })).body;
}

const sentFor = (ruleId: string) => ops.dispatcher.sent.filter((s) => (s.message.payload.rule as { id: string }).id === ruleId);

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
      const sent = sentFor(r.id);
      assert.equal(sent.length, 1);
      assert.ok(Math.abs((sent[0].message.payload.value as number) - value) < 1e-9, `${name}: ${sent[0].message.payload.value}`);
      assert.equal(sent[0].message.dedupeKey, `alert:${r.id}:${slot.toISOString()}`);
      assert.deepEqual(sent[0].destination, { type: "webhook", target: "https://hooks.example.com/ops" });
      assert.equal(sent[0].tenantId, t.tenantId);
    });
  }

  test("ok when the metric does not cross, unsupported_metric for a name it does not know, disabled rules untouched", async () => {
    for (const name of ["quiet", "undegraded"]) {
      assert.equal((await stored(t, rules[name].id)).status, "ok", name);
      assert.equal(sentFor(rules[name].id).length, 0);
    }
    const unknown = await stored(t, rules.unknown.id);
    assert.equal(unknown.status, "unsupported_metric");
    assert.equal(unknown.lastFiredAt, null);
    assert.equal(sentFor(rules.unknown.id).length, 0);
    assert.equal(sentFor(rules.disabled.id).length, 0);
    const [disabled] = await sql("SELECT last_evaluated_at FROM alert_rules WHERE tenant_id = $1 AND id = $2", [t.tenantId, rules.disabled.id]);
    assert.equal(disabled.last_evaluated_at, null);
  });

  test("running the same slot again sends nothing and changes no status", async () => {
    const before = ops.dispatcher.sent.length;
    const statuses = await sql("SELECT id, status, last_fired_at FROM alert_rules WHERE tenant_id = $1 ORDER BY id", [t.tenantId]);
    await evaluate.run(slot);
    assert.equal(ops.dispatcher.sent.length, before);
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
    assert.equal(sentFor(r.id)[0].message.payload.value, 0.3);
  });

  test("latency_p99 and http_5xx_count come from the shared request statistics", async () => {
    const t = await svc.createTenant();
    const other = await svc.createTenant();
    const now = Date.now();
    for (let i = 0; i < 100; i++) ops.requestStats.record(t.tenantId, new Date(now - 30_000), 40);
    ops.requestStats.record(t.tenantId, new Date(now - 20_000), 900, 503);
    ops.requestStats.record(t.tenantId, new Date(now - 20_000), 950, 500);
    for (let i = 0; i < 10; i++) ops.requestStats.record(other.tenantId, new Date(now - 20_000), 5000, 500);
    const latency = await rule(t, { metric: "latency_p99", operator: "gt", threshold: 500 });
    const errors = await rule(t, { metric: "http_5xx_count", operator: "gte", threshold: 2 });
    const fewErrors = await rule(t, { metric: "http_5xx_count", operator: "gt", threshold: 2 });
    await evaluate.run(new Date(now));
    assert.equal((await stored(t, latency.id)).status, "fired");
    assert.equal(sentFor(latency.id)[0].message.payload.value, 900);
    assert.equal((await stored(t, errors.id)).status, "fired");
    assert.equal(sentFor(errors.id)[0].message.payload.value, 2, "another tenant's errors do not count");
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
    assert.equal(sentFor(r.id).length, 1);
    const later = new Date(slot.getTime() + 120_000);
    await evaluate.run(later);
    assert.equal((await stored(t, r.id)).status, "fired");
    assert.deepEqual(sentFor(r.id).map((s) => s.message.dedupeKey), [`alert:${r.id}:${slot.toISOString()}`, `alert:${r.id}:${later.toISOString()}`]);
  });

  test("every destination failing is delivery_failed without a cooldown; one accepting of two is fired", async () => {
    const t = await svc.createTenant();
    const provider = ops.providers.add(t.tenantId, randomUUID());
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    const hook = { type: "webhook" as const, target: `https://hooks.example.com/${t.tenantId}` };
    ops.dispatcher.fail(hook);
    ops.dispatcher.fail({ providerId: provider });
    const both = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5, channels: [hook, provider] });
    await evaluate.run(slot);
    const failed = await stored(t, both.id);
    assert.equal(failed.status, "delivery_failed");
    assert.equal(failed.lastFiredAt, null);
    assert.equal(sentFor(both.id).length, 0);

    ops.dispatcher.fail({ providerId: provider }, false);
    const next = new Date(slot.getTime() + 60_000);
    await evaluate.run(next);
    const fired = await stored(t, both.id);
    assert.equal(fired.status, "fired", "a failed delivery starts no cooldown");
    assert.deepEqual(sentFor(both.id).map((s) => s.destination), [{ providerId: provider }]);
  });

  test("a rule whose metric cannot be read fails the run after the others and is evaluated by the retry", async () => {
    const t = await svc.createTenant();
    const slot = new Date();
    await insertDecisions(t.tenantId, 4, { at: new Date(slot.getTime() - 30_000), empty: true });
    ops.requestStats.record(t.tenantId, new Date(slot.getTime() - 30_000), 2000);
    const latency = await rule(t, { metric: "latency_p99", operator: "gt", threshold: 1000 });
    const empty = await rule(t, { metric: "empty_candidate_rate", operator: "gt", threshold: 0.5 });
    ops.requestStats.unavailable = true;
    try {
      await assert.rejects(evaluate.run(slot), /alert rules were not evaluated/);
    } finally {
      ops.requestStats.unavailable = false;
    }
    assert.equal((await stored(t, empty.id)).status, "fired", "the other rules were evaluated");
    assert.equal(sentFor(latency.id).length, 0);
    await evaluate.run(slot);
    assert.equal((await stored(t, latency.id)).status, "fired");
    assert.equal(sentFor(empty.id).length, 1);
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
    assert.equal(sentFor(r.id).length, 1, "the dispatcher saw the same dedupeKey and sent nothing twice");
  });
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";
import { tenantKey } from "../../src/platform/redis.js";
import { ALL_CONTEXTS_BUCKET } from "../../src/core/index.js";
import { subjectHash } from "../../src/portability/customer-erasure.js";
import { duplicateForSubscribing, eventStreamKey } from "../../src/platform/redis.js";

let svc: TestService;
let child: ChildService;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

const call = (key: string, method: string, path: string, body?: unknown, baseUrl = svc.baseUrl) =>
  rest(baseUrl, method, path, { key, body: body ?? (method === "GET" || method === "DELETE" ? undefined : {}), headers: { "x-requested-with": "test" } });

async function created(t: Tenant, path: string, body: Record<string, unknown>) {
  const res = await call(t.apiKey, "POST", path, body);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body as any;
}


const redis = () => svc.running.foundation.redis!;

/** A tenant with one active offer, an adaptive flow, and a data-plane key. */
async function tenantWithFlow(modelConfig: Record<string, unknown> = { type: "adaptive" }) {
  const t = await svc.createTenant(unique("t"));
  const offer = await created(t, "/api/v1/offers", { name: unique("offer"), status: "active" });
  const model = await created(t, "/api/v1/algorithm-models", { name: unique("m"), key: unique("m"), ...modelConfig });
  const flow = await created(t, "/api/v1/decision-flows", {
    name: unique("flow"), key: unique("flow"), status: "active",
    config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: model.key }, { type: "rank", count: 1 }] },
  });
  const dataKey = (await call(t.apiKey, "POST", "/api/v1/api-keys", { name: "sdk" })).body.key as string;
  return { t, offer, model, flow, dataKey };
}

async function recommend(dataKey: string, customerId: string, flow: string, baseUrl = svc.baseUrl) {
  const res = await call(dataKey, "POST", "/api/v1/recommend", { customerId, flow }, baseUrl);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body as any;
}

async function click(dataKey: string, customerId: string, rec: any, outcome = "click") {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/respond", {
    key: dataKey,
    body: { customerId, outcome, recommendationId: rec.recommendationId, rank: 1 },
    headers: { "idempotency-key": unique("click") },
  });
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

/** Traces are written after the answer: waits until `count` exist for the customer. */
async function traces(tenantId: string, customerId: string, count: number) {
  for (let i = 0; i < 100; i++) {
    if ((await svc.sql("SELECT count(*)::int AS n FROM decision_traces WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]))[0].n >= count) return;
    await sleep(20);
  }
  assert.fail(`traces of ${customerId} not written`);
}

async function rowsOf(tenantId: string, customerId: string) {
  const out: Record<string, number> = {};
  for (const table of ["customers", "recommendations", "interactions", "decision_traces"]) {
    out[table] = (await svc.sql(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1 AND customer_id = $2`, [tenantId, customerId]))[0].n;
  }
  return out;
}

/** The customer's counter keys in Redis: frequency caps and kept negative outcomes. */
async function counterKeys(tenantId: string, customerId: string): Promise<string[]> {
  const prefix = svc.config.redisKeyPrefix;
  const [, caps] = await redis().scan("0", "MATCH", `${prefix}${tenantKey(tenantId, `fc:${customerId}:`)}*`, "COUNT", 10_000);
  const negatives = await redis().exists(tenantKey(tenantId, `neg:${customerId}`));
  return [...caps, ...(negatives ? ["neg"] : [])];
}

async function evidence(tenantId: string, offerId: string) {
  const [s, t] = await redis().hmget(tenantKey(tenantId, `ad:${ALL_CONTEXTS_BUCKET}`), `${offerId}:s`, `${offerId}:t`);
  return { successes: Number(s ?? 0), trials: Number(t ?? 0) };
}

before(async () => {
  svc = await startTestService();
  child = await startChildService(svc);
});
after(async () => {
  await child.stop();
  await svc.stop();
});

describe("GDPR erasure", () => {
  test("removes the customer's rows, traces, variant assignments; verified by SQL and Redis; others untouched; audited without the id", async () => {
    const { t, offer, model, flow, dataKey } = await tenantWithFlow();
    const other = await created(t, "/api/v1/algorithm-models", { name: unique("m"), key: unique("m"), type: "adaptive" });
    const experiment = await created(t, "/api/v1/experiments", {
      name: unique("exp"), championModelId: model.id, status: "active", trafficSplit: { championPct: 50 },
      challengers: [{ modelId: other.id, key: "b", trafficPct: 50 }], holdoutPercent: 0,
    });
    await created(t, "/api/v1/contact-policies", { name: unique("cap"), config: { scope: "offer", maxImpressions: 10, windowSeconds: 86400 } });
    for (const id of ["alice", "bob"]) assert.equal((await call(t.apiKey, "PUT", `/api/v1/customers/${id}`, { attributes: { age: 40 } })).status, 200);
    const recs = [await recommend(dataKey, "alice", flow.key), await recommend(dataKey, "alice", flow.key), await recommend(dataKey, "bob", flow.key)];
    assert.equal(recs[0].experiment?.id, experiment.id, "the experiment assigned a variant");
    await click(dataKey, "alice", recs[0]);
    await click(dataKey, "alice", recs[1], "dismiss");
    await click(dataKey, "bob", recs[2], "dismiss");
    await traces(t.tenantId, "alice", 2);
    await traces(t.tenantId, "bob", 1);
    const assignment = (customerId: string) => redis().exists(tenantKey(t.tenantId, `exp:${experiment.id}:${customerId}`));
    assert.equal(await assignment("alice"), 1);
    assert.equal((await counterKeys(t.tenantId, "alice")).length, 2, "a frequency counter and the kept dismissal");

    // Another tenant's admin erases nothing here.
    const stranger = await svc.createTenant(unique("stranger"));
    const foreign = await call(stranger.apiKey, "DELETE", "/api/v1/export/full?customerId=alice");
    assert.equal(foreign.status, 200);
    assert.equal((await rowsOf(t.tenantId, "alice")).recommendations, 2);

    const res = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=alice");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const report = res.body as any;
    assert.equal(report.verified, true);
    assert.equal(report.removed.customers, 1);
    assert.equal(report.removed.recommendations, 2);
    assert.equal(report.removed.decisionTraces, 2);
    assert.equal(report.removed.interactions, 4, "two impressions, a click and a dismissal");
    assert.equal(report.removed.counters, 2);
    assert.equal(report.removed.variantAssignments, 1);
    assert.deepEqual(await rowsOf(t.tenantId, "alice"), { customers: 0, recommendations: 0, interactions: 0, decision_traces: 0 });
    assert.deepEqual(await rowsOf(t.tenantId, "bob"), { customers: 1, recommendations: 1, interactions: 2, decision_traces: 1 });
    assert.deepEqual(await counterKeys(t.tenantId, "alice"), []);
    assert.equal((await counterKeys(t.tenantId, "bob")).length, 2);
    assert.equal(await assignment("alice"), 0);
    assert.equal(await assignment("bob"), 1);
    assert.equal((await call(t.apiKey, "GET", "/api/v1/customers/alice")).status, 404);
    // Every trial and the success alice added are taken back: what is left is bob's.
    assert.deepEqual(await evidence(t.tenantId, offer.id), { trials: 1, successes: 0 });
    assert.equal(report.evidenceTrialsRemoved, 2);
    assert.equal(report.evidenceSuccessesRemoved, 1);

    const [entry] = await svc.sql("SELECT * FROM audit_log WHERE tenant_id = $1 AND action = 'gdpr_erasure'", [t.tenantId]);
    assert.equal(entry.entity_id, subjectHash(t.tenantId, "alice"));
    assert.equal(JSON.stringify(entry).includes("alice"), false, "no personal data in the audit entry");

    const again = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=alice");
    assert.equal(again.status, 200);
    assert.equal((again.body as any).removed.recommendations ?? 0, 0);
  });

  test("a constructed case: the adaptive evidence afterwards is exactly the other customers'", async () => {
    const { t, offer, flow, dataKey } = await tenantWithFlow();
    const x = [await recommend(dataKey, "x", flow.key), await recommend(dataKey, "x", flow.key), await recommend(dataKey, "x", flow.key)];
    const y = [await recommend(dataKey, "y", flow.key), await recommend(dataKey, "y", flow.key)];
    await click(dataKey, "x", x[1]);
    await click(dataKey, "x", x[2]);
    await click(dataKey, "y", y[0]);
    assert.deepEqual(await evidence(t.tenantId, offer.id), { trials: 5, successes: 3 });
    const res = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=x");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(await evidence(t.tenantId, offer.id), { trials: 2, successes: 1 }, "y's two trials and one success");
    // The exposure markers of x's successes are gone with them.
    assert.equal(await redis().exists(tenantKey(t.tenantId, `ax:rec:${x[1].recommendationId}:1`)), 0);
    assert.equal(await redis().exists(tenantKey(t.tenantId, `ax:rec:${y[0].recommendationId}:1`)), 1);
  });

  test("every process forgets the cached attributes before the answer", async () => {
    const { t, flow, dataKey } = await tenantWithFlow({ type: "logistic_regression", config: { intercept: -1, coefficients: { "customer.age": 0.05 } } });
    assert.equal((await call(t.apiKey, "PUT", "/api/v1/customers/carol", { attributes: { age: 40 } })).status, 200);
    const withAge = 1 / (1 + Math.exp(-(-1 + 0.05 * 40)));
    const without = 1 / (1 + Math.exp(1));
    for (const baseUrl of [svc.baseUrl, child.baseUrl]) {
      const rec = await recommend(dataKey, "carol", flow.key, baseUrl);
      assert.ok(Math.abs(rec.offers[0].propensity - withAge) < 1e-9, "the process has carol's attributes cached");
    }
    assert.equal((await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=carol")).status, 200);
    for (const baseUrl of [child.baseUrl, svc.baseUrl]) {
      const rec = await recommend(dataKey, "carol", flow.key, baseUrl);
      assert.ok(Math.abs(rec.offers[0].propensity - without) < 1e-9, `${baseUrl} still scored with the erased attributes`);
    }
  });

  test("no process answers a replay with an erased customer's outcome from memory", async () => {
    const { t, flow, dataKey } = await tenantWithFlow();
    const rec = await recommend(dataKey, "dana", flow.key);
    const respond = (baseUrl: string) =>
      rest(baseUrl, "POST", "/api/v1/respond", {
        key: dataKey,
        body: { customerId: "dana", outcome: "click", recommendationId: rec.recommendationId, rank: 1, context: { email: "dana@example.com" } },
        headers: { "idempotency-key": "dana-click" },
      });
    assert.equal((await respond(svc.baseUrl)).body.status, "recorded");
    // Each process keeps the record now: the one that wrote it, and the other, which read it back.
    for (const baseUrl of [svc.baseUrl, child.baseUrl]) assert.equal((await respond(baseUrl)).body.status, "already_recorded");
    assert.equal((await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=dana")).status, 200);
    for (const baseUrl of [svc.baseUrl, child.baseUrl]) {
      const res = await respond(baseUrl);
      // The recommendation went with the customer: the key is new again and attributes nothing.
      assert.equal(res.status, 400, `${baseUrl}: ${JSON.stringify(res.body)}`);
      assert.doesNotMatch(JSON.stringify(res.body), /dana@example\.com/);
    }
  });

  test("a process that does not confirm it dropped the customer's cached data: 503 ERASURE_INCOMPLETE, and a retry once it answers is verified", async () => {
    const { t, flow, dataKey } = await tenantWithFlow();
    await recommend(dataKey, "gil", flow.key);
    // Subscribed like a service process, but it never confirms (a process that hangs).
    const silent = duplicateForSubscribing(redis());
    await silent.subscribe(`${svc.config.redisKeyPrefix}decisioning.customer.erased`);
    try {
      const res = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=gil");
      assert.equal(res.status, 503, JSON.stringify(res.body));
      assert.match(JSON.stringify(res.body), /ERASURE_INCOMPLETE/);
      assert.deepEqual(await rowsOf(t.tenantId, "gil"), { customers: 0, recommendations: 0, interactions: 0, decision_traces: 0 }, "the rows are gone all the same");
    } finally {
      await silent.quit();
    }
    const retry = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=gil");
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(retry.body.verified, true);
  });

  test("removes the customer's events, journey enrollments and stream entries; the profile and CLV no longer see them", async () => {
    const { t, flow } = await tenantWithFlow();
    const journey = await created(t, "/api/v1/journeys", { name: unique("journey"), steps: [{ type: "decision", flow: flow.key }] });
    await created(t, "/api/v1/triggers", { name: unique("rule"), eventType: "purchase", action: { type: "journey", journeyId: journey.id } });
    const sent = await call(t.apiKey, "POST", "/api/v1/events", [
      { eventType: "purchase", customerId: "eve", properties: { amount: 150 } },
      { eventType: "page_view", customerId: "eve" },
      { eventType: "purchase", customerId: "frank", properties: { amount: 90 } },
    ]);
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const stream = eventStreamKey(t.tenantId);
    const streamCustomers = async () => (await redis().xrange(stream, "-", "+")).map(([, fields]) => fields[fields.indexOf("customerId") + 1]).sort();
    assert.deepEqual(await streamCustomers(), ["eve", "eve", "frank"]);
    const profile = await call(t.apiKey, "GET", "/api/v1/customers/eve/unified-profile?sections=interactions,journeys");
    assert.equal(profile.status, 200, JSON.stringify(profile.body));
    assert.equal(profile.body.sections.find((s: any) => s.name === "journeys").data.length, 1, "the trigger enrolled eve");
    assert.equal((await call(t.apiKey, "GET", "/api/v1/customers/eve/clv")).status, 200, "CLV computed from her events");

    const res = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=eve");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const report = res.body as any;
    assert.equal(report.verified, true);
    assert.equal(report.removed.customerEvents, 2);
    assert.equal(report.removed.journeyEnrollments, 1);
    assert.equal(report.removed.eventStreamEntries, 2);
    assert.equal(report.removed.clvRecords, 1);
    const count = async (table: string, customerId: string) =>
      (await svc.sql(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1 AND customer_id = $2`, [t.tenantId, customerId]))[0].n;
    assert.deepEqual([await count("customer_events", "eve"), await count("journey_enrollments", "eve")], [0, 0]);
    assert.deepEqual([await count("customer_events", "frank"), await count("journey_enrollments", "frank")], [1, 1], "frank keeps his event and enrollment");
    assert.deepEqual(await streamCustomers(), ["frank"], "only eve's entries left the stream");
    // Nothing is left to show or to compute from.
    assert.equal((await call(t.apiKey, "GET", "/api/v1/customers/eve/unified-profile?sections=interactions,journeys")).status, 404);
    assert.equal((await call(t.apiKey, "GET", "/api/v1/customers/eve/clv")).status, 404);
    assert.deepEqual((await call(t.apiKey, "GET", `/api/v1/journeys/${journey.id}/enrollments`)).body.data.map((e: any) => e.customerId), ["frank"]);
  });

  test("bad input and roles", async () => {
    const { t } = await tenantWithFlow();
    const editor = await svc.createUser(t.tenantId, "editor");
    const missing = await call(t.apiKey, "DELETE", "/api/v1/export/full");
    assert.equal(missing.status, 400);
    assert.match(JSON.stringify(missing.body), /customerId: is required/);
    assert.equal((await call(editor.apiKey, "DELETE", "/api/v1/export/full?customerId=a")).status, 403);
  });

  test("the customer id may come in a JSON body (spec conventions: bodies are JSON); query and body must agree", async () => {
    const { t, flow, dataKey } = await tenantWithFlow();
    for (const id of ["gina", "hank", "ivy"]) await recommend(dataKey, id, flow.key);
    const byBody = await call(t.apiKey, "DELETE", "/api/v1/export/full", { customerId: "gina" });
    assert.equal(byBody.status, 200, JSON.stringify(byBody.body));
    assert.equal(byBody.body.removed.recommendations, 1);
    assert.equal((await rowsOf(t.tenantId, "gina")).recommendations, 0);
    assert.equal((await rowsOf(t.tenantId, "hank")).recommendations, 1, "only the named customer");
    // The proto name is read too, as in every JSON body.
    const snake = await call(t.apiKey, "DELETE", "/api/v1/export/full", { customer_id: "hank" });
    assert.equal(snake.status, 200, JSON.stringify(snake.body));
    assert.equal((await rowsOf(t.tenantId, "hank")).recommendations, 0);
    // Both, saying different things: 400 naming the field, nothing erased.
    const conflict = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=ivy", { customerId: "someone-else" });
    assert.equal(conflict.status, 400);
    assert.match(conflict.body.detail, /^customerId: /);
    assert.equal((await rowsOf(t.tenantId, "ivy")).recommendations, 1);
    // Both, saying the same: erased.
    const same = await call(t.apiKey, "DELETE", "/api/v1/export/full?customerId=ivy", { customerId: "ivy" });
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.equal((await rowsOf(t.tenantId, "ivy")).recommendations, 0);
    assert.equal((await call(t.apiKey, "DELETE", "/api/v1/export/full", {})).status, 400, "an empty body names no one");
  });

  test("the CSRF guard still holds body-less erasures by API key to a JSON type or X-Requested-With", async () => {
    const { t } = await tenantWithFlow();
    const bare = await rest(svc.baseUrl, "DELETE", "/api/v1/export/full?customerId=nobody", { key: t.apiKey });
    assert.equal(bare.status, 403);
    assert.equal(bare.headers.get("x-error-reason"), "CSRF_GUARD");
    const form = await rest(svc.baseUrl, "DELETE", "/api/v1/export/full", { key: t.apiKey, rawBody: "customerId=nobody", headers: { "content-type": "application/x-www-form-urlencoded" } });
    assert.equal(form.status, 403, "a body a cross-site form could send is refused before it is read");
    const marked = await rest(svc.baseUrl, "DELETE", "/api/v1/export/full?customerId=nobody", { key: t.apiKey, headers: { "x-requested-with": "test" } });
    assert.equal(marked.status, 200, JSON.stringify(marked.body));
    const json = await rest(svc.baseUrl, "DELETE", "/api/v1/export/full", { key: t.apiKey, body: { customerId: "nobody" } });
    assert.equal(json.status, 200, JSON.stringify(json.body));
  });
});

describe("tenant deletion (migration 0029)", () => {
  test("deleting a tenant row removes its decisions, outcomes and traces in the deleting transaction; another tenant keeps its own", async () => {
    const [gone, kept] = [await tenantWithFlow(), await tenantWithFlow()];
    for (const { flow, dataKey } of [gone, kept]) await click(dataKey, "dora", await recommend(dataKey, "dora", flow.key));
    for (const { t } of [gone, kept]) await traces(t.tenantId, "dora", 1);
    const decisionRows = async (tenantId: string) => {
      const { customers: _, ...rest } = await rowsOf(tenantId, "dora");
      return rest;
    };
    const before = { recommendations: 1, interactions: 2, decision_traces: 1 }; // the impression and the click
    assert.deepEqual(await decisionRows(gone.t.tenantId), before);

    const db = svc.running.foundation.db;
    await assert.rejects(
      db.transaction(async (transaction) => {
        await db.query("DELETE FROM tenants WHERE id = $1", { bind: [gone.t.tenantId], transaction });
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.deepEqual(await decisionRows(gone.t.tenantId), before, "a rolled-back delete keeps the rows");

    await svc.sql("DELETE FROM tenants WHERE id = $1", [gone.t.tenantId]);
    assert.deepEqual(await decisionRows(gone.t.tenantId), { recommendations: 0, interactions: 0, decision_traces: 0 });
    assert.deepEqual(await decisionRows(kept.t.tenantId), before);
  });
});

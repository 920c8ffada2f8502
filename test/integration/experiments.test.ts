import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, rest, rpcError } from "../support/clients.js";
import { startChildService } from "../support/child-service.js";
import { ExperimentService } from "../../gen/decisioning/v1/experiments_pb.js";
import { assignVariant, CHAMPION_VARIANT, HOLDOUT_BASELINE_MODEL, HOLDOUT_VARIANT, type ExperimentSplit } from "../../src/core/index.js";
import { tenantKey } from "../../src/platform/redis.js";
import { ASSIGNMENT_TTL_SECONDS } from "../../src/experiments/variant-assignments.js";
import { tenantCalls, unique, type Tenant } from "../support/tenant-calls.js";

let svc: TestService;
const { call, create, dataKey } = tenantCalls(() => svc.baseUrl);





/** A formula model that ranks by one term alone (weights 0 elsewhere), so each model orders offers its own way. */
async function model(t: Tenant, term: "businessValue" | "relevance" | "impact") {
  const weights = { priority: 0, businessValue: 0, propensity: 0, impact: 0, relevance: 0, [term]: 1 };
  return create("algorithm-models", { name: unique(term), key: unique(term), type: "formula", config: { weights } }, t);
}

/**
 * A tenant with three offers (priority and businessValue in opposite orders), a champion model by
 * businessValue, a challenger model, and an active flow scoring with the champion.
 */
async function setup() {
  const t = await svc.createTenant();
  const offers = [];
  for (const [priority, businessValue] of [[10, 90], [90, 10], [50, 50]]) {
    offers.push(await create("offers", { name: unique("offer"), status: "active", priority, businessValue }, t));
  }
  const champion = await model(t, "businessValue");
  const challenger = await model(t, "impact");
  const flow = await create("decision-flows", {
    name: unique("flow"),
    key: unique("flow"),
    status: "active",
    config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: champion.key }, { type: "rank", count: 3 }] },
  }, t);
  return { t, offers, champion, challenger, flow, key: await dataKey(t) };
}

function experimentBody(champion: any, challenger: any, extra: Record<string, unknown> = {}) {
  return {
    name: unique("exp"),
    championModelId: champion.id,
    trafficSplit: { championPct: 50 },
    challengers: [{ modelId: challenger.id, key: "b", trafficPct: 50 }],
    holdoutPercent: 20,
    ...extra,
  };
}

const splitOf = (e: any): ExperimentSplit => ({
  id: e.id,
  key: e.key,
  flowId: e.flowId,
  championModelId: e.championModelId,
  championPct: e.trafficSplit.championPct,
  challengers: e.challengers,
  holdoutPercent: e.holdoutPercent,
});

/** Customers the hash puts into each wanted variant of `split`. */
function customersFor(split: ExperimentSplit, variants: string[]): Record<string, string> {
  const found: Record<string, string> = {};
  for (let i = 0; Object.keys(found).length < variants.length; i++) {
    const v = assignVariant(split, `cust-${i}`);
    if (variants.includes(v) && !found[v]) found[v] = `cust-${i}`;
  }
  return found;
}

before(async () => {
  svc = await startTestService();
});
after(() => svc.stop());

describe("experiment routes", () => {
  test("create (201) with defaults and a generated key; read; list with cursor pages; audit rows", async () => {
    const { t, champion, challenger } = await setup();
    const created = await create("experiments", experimentBody(champion, challenger), t);
    assert.match(created.key, /^exp-[0-9a-f]{12}$/);
    assert.equal(created.status, "draft");
    assert.equal(created.autoPromote, false);
    assert.equal(created.promoteThreshold, 0.05);
    assert.equal(created.promoteAfterDays, 7);
    assert.equal(created.startedAt, null);
    assert.equal(created.flowId, null);
    assert.deepEqual(created.trafficSplit, { championPct: 50 });
    assert.deepEqual(created.challengers, [{ modelId: challenger.id, key: "b", trafficPct: 50 }]);
    assert.equal(created.version, 1);
    const read = await call("GET", `/api/v1/experiments/${created.id}`, t.apiKey);
    assert.deepEqual(read.body, created);

    const second = await create("experiments", experimentBody(champion, challenger, { key: "spring-sale" }), t);
    assert.equal(second.key, "spring-sale");
    const page1 = await call("GET", "/api/v1/experiments?limit=1", t.apiKey);
    assert.equal(page1.status, 200);
    assert.deepEqual(page1.body.data.map((e: any) => e.id), [second.id]);
    assert.equal(page1.body.pagination.hasMore, true);
    const page2 = await call("GET", `/api/v1/experiments?limit=1&cursor=${page1.body.pagination.cursor}`, t.apiKey);
    assert.deepEqual(page2.body.data.map((e: any) => e.id), [created.id]);
    assert.equal(page2.body.pagination.hasMore, false);
    assert.equal(page2.body.pagination.cursor, null);
    const drafts = await call("GET", "/api/v1/experiments?status=active", t.apiKey);
    assert.deepEqual(drafts.body.data, []);

    const audit = await svc.sql("SELECT action, entity_id, after->>'key' AS key FROM audit_log WHERE tenant_id = $1 AND entity_type = 'experiment' ORDER BY seq", [t.tenantId]);
    assert.deepEqual(audit.map((a) => [a.action, a.entity_id, a.key]), [["create", created.id, created.key], ["create", second.id, "spring-sale"]]);
  });

  test("a body of the spec's fields only (2.15) is created: name defaults to the key, generated or given", async () => {
    const { t, champion, challenger } = await setup();
    const specOnly = await call("POST", "/api/v1/experiments", t.apiKey, {
      championModelId: champion.id,
      trafficSplit: { championPct: 50 },
      challengers: [{ modelId: challenger.id, trafficPct: 50 }],
      holdoutPercent: 10,
      status: "draft",
    });
    assert.equal(specOnly.status, 201, JSON.stringify(specOnly.body));
    assert.match(specOnly.body.key, /^exp-[0-9a-f]{12}$/);
    assert.equal(specOnly.body.name, specOnly.body.key);
    const { name: _, ...unnamed } = experimentBody(champion, challenger, { key: "named-by-key" });
    assert.equal((await create("experiments", unnamed, t)).name, "named-by-key");
  });

  test("status moves: legal ones pass (activation stamps startedAt), illegal ones are 400 naming status", async () => {
    const { t, champion, challenger } = await setup();
    const e = await create("experiments", experimentBody(champion, challenger), t);
    const put = (body: unknown) => call("PUT", `/api/v1/experiments/${e.id}`, t.apiKey, body);
    const paused = await put({ status: "paused" });
    assert.equal(paused.status, 400);
    assert.match(paused.body.detail, /^status: cannot move from draft to paused; from draft an experiment may move to active or archived/);
    const active = await put({ status: "active" });
    assert.equal(active.status, 200, JSON.stringify(active.body));
    assert.ok(Date.parse(active.body.startedAt) > Date.now() - 60_000);
    assert.equal(active.body.version, 2);
    assert.equal((await put({ status: "draft" })).status, 400);
    const pausedNow = await put({ status: "paused" });
    assert.equal(pausedNow.body.status, "paused");
    const again = await put({ status: "active" });
    assert.equal(again.body.startedAt, active.body.startedAt, "startedAt is the first activation");
    // Champion change: the challenger becomes champion, the old champion the challenger.
    const swapped = await put({ championModelId: challenger.id, challengers: [{ modelId: champion.id, trafficPct: 50 }] });
    assert.equal(swapped.status, 200, JSON.stringify(swapped.body));
    assert.equal(swapped.body.championModelId, challenger.id);
    assert.deepEqual(swapped.body.challengers, [{ modelId: champion.id, key: null, trafficPct: 50 }]);
    assert.equal(swapped.body.name, e.name, "fields not sent stay");
    const archived = await put({ status: "archived" });
    assert.equal(archived.body.status, "archived");
    const frozen = await put({ name: "renamed" });
    assert.equal(frozen.status, 400);
    assert.match(frozen.body.detail, /^name: cannot change: the experiment is archived/);
    assert.match((await put({ status: "active" })).body.detail, /^status: cannot change: the experiment is archived/);
    const unchanged = await put({ status: "archived", name: e.name });
    assert.equal(unchanged.status, 200, "a PUT that changes nothing is idempotent in every state, archived too");
    assert.equal(unchanged.body.version, archived.body.version);
    const updates = await svc.sql("SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 AND action = 'update'", [t.tenantId, e.id]);
    assert.equal(updates[0].n, 5);
  });

  test("delete: 204 without a body, then 404 everywhere; the other doors agree", async () => {
    const { t, champion, challenger } = await setup();
    const e = await create("experiments", experimentBody(champion, challenger), t);
    const client = connectClient(ExperimentService, svc.baseUrl);
    const viaConnect = await client.getExperiment({ id: e.id }, { headers: { "x-api-key": t.apiKey } });
    assert.equal(viaConnect.key, e.key);
    const del = await call("DELETE", `/api/v1/experiments/${e.id}`, t.apiKey);
    assert.equal(del.status, 204, "spec 7");
    assert.equal(del.body, null);
    for (const [method, path] of [["GET", ""], ["PUT", ""], ["DELETE", ""], ["GET", "/results"]]) {
      const res = await call(method, `/api/v1/experiments/${e.id}${path}`, t.apiKey, method === "PUT" ? { name: "x" } : undefined);
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    const err = await rpcError(client.getExperiment({ id: e.id }, { headers: { "x-api-key": t.apiKey } }));
    assert.equal(err.reason, "NOT_FOUND");
    const audit = await svc.sql("SELECT action FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 ORDER BY seq", [t.tenantId, e.id]);
    assert.deepEqual(audit.map((a) => a.action), ["create", "soft_delete"]);
    // Only REST's answer is bodiless: Connect callers still get DeleteResponse.
    const other = await create("experiments", experimentBody(champion, challenger), t);
    const viaConnectDelete = await client.deleteExperiment({ id: other.id }, { headers: { "x-api-key": t.apiKey } });
    assert.deepEqual([viaConnectDelete.success, viaConnectDelete.id, viaConnectDelete.cascaded], [true, other.id, 0]);
  });

  test("bad input is a 400 naming the field, and writes nothing", async () => {
    const { t, champion, challenger, flow } = await setup();
    const other = await setup();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [experimentBody(champion, challenger, { trafficSplit: { championPct: 40 } }), /^trafficSplit\.championPct: championPct plus the challengers' trafficPct must equal 100, not 90/],
      [experimentBody(champion, challenger, { challengers: [{ modelId: challenger.id, trafficPct: 60 }] }), /^trafficSplit\.championPct: .* not 110/],
      [experimentBody(champion, challenger, { challengers: [{ modelId: "7f2c1a4e-0000-4000-8000-000000000000", trafficPct: 50 }] }), /^challengers\[0\]\.modelId: unknown model 7f2c1a4e-0000-4000-8000-000000000000/],
      [experimentBody(champion, challenger, { championModelId: "not-an-id" }), /^championModelId: unknown model not-an-id/],
      [experimentBody(other.champion, challenger), new RegExp(`^championModelId: unknown model ${other.champion.id}`)],
      [experimentBody(champion, challenger, { flowId: other.flow.id }), new RegExp(`^flowId: unknown decision flow ${other.flow.id}`)],
      [experimentBody(champion, challenger, { challengers: [{ modelId: challenger.id, key: "b", trafficPct: 25 }, { modelId: champion.id, key: "b", trafficPct: 25 }] }), /challengers\[1\]\.modelId: is already the champion.*challengers\[1\]\.key: variant name b is already taken/],
      [experimentBody(champion, challenger, { holdoutPercent: 100 }), /^holdoutPercent: must be at least 0 and below 100/],
      [experimentBody(champion, challenger, { challengers: [{ modelId: challenger.id, trafficPct: 150 }] }), /^challengers\[0\]\.trafficPct: must be between 0 and 100/],
      [experimentBody(champion, challenger, { status: "paused" }), /^status: a new experiment starts as draft or active/],
      [experimentBody(champion, challenger, { status: "running" }), /^status: must be one of draft, active, paused, archived/],
      [experimentBody(champion, challenger, { key: "__holdout__" }), /^key: must be/],
      [experimentBody(champion, challenger, { promoteThreshold: -1 }), /^promoteThreshold: /],
      [experimentBody(champion, challenger, { promoteAfterDays: 1.5 }), /^promoteAfterDays: /],
      [experimentBody(champion, challenger, { name: " " }), /^name: must not be empty/],
      [{ trafficSplit: { championPct: 100 } }, /^championModelId: is required/],
    ];
    for (const [body, message] of cases) {
      const res = await call("POST", "/api/v1/experiments", t.apiKey, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, message);
      assert.equal(res.body.title, "Bad Request");
    }
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM experiments WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);

    const e = await create("experiments", experimentBody(champion, challenger, { flowId: flow.id, key: "fixed" }), t);
    for (const [body, message] of [
      [{ key: "other" }, /^key: cannot change/],
      [{ trafficSplit: { championPct: 60 } }, /^trafficSplit\.championPct: .* not 110/],
      [{ championModelId: other.champion.id }, /^championModelId: unknown model/],
    ] as const) {
      const res = await call("PUT", `/api/v1/experiments/${e.id}`, t.apiKey, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, message);
    }
    const [row] = await svc.sql("SELECT version, key, champion_pct FROM experiments WHERE tenant_id = $1 AND id = $2", [t.tenantId, e.id]);
    assert.deepEqual(row, { version: 1, key: "fixed", champion_pct: 50 });
    const dup = await call("POST", "/api/v1/experiments", t.apiKey, experimentBody(champion, challenger, { key: "fixed" }));
    assert.equal(dup.status, 409);
    assert.match(dup.body.detail, /^key: an experiment with key "fixed" already exists/);
    const badQuery = await call("GET", `/api/v1/experiments/${e.id}/results?confidenceLevel=1.5&power=0`, t.apiKey);
    assert.equal(badQuery.status, 400);
    assert.match(badQuery.body.detail, /^confidenceLevel: must be strictly between 0 and 1; power: must be strictly between 0 and 1/);
  });

  test("tenancy and roles: another tenant's experiment is 404; viewers read but do not write", async () => {
    const { t, champion, challenger } = await setup();
    const e = await create("experiments", experimentBody(champion, challenger), t);
    const other = await svc.createTenant();
    for (const [method, path] of [["GET", ""], ["PUT", ""], ["DELETE", ""], ["GET", "/results"]]) {
      const res = await call(method, `/api/v1/experiments/${e.id}${path}`, other.apiKey, method === "PUT" ? { status: "active" } : undefined);
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    assert.deepEqual((await call("GET", "/api/v1/experiments", other.apiKey)).body.data, []);
    const viewer = await svc.createUser(t.tenantId, "viewer");
    assert.equal((await call("GET", `/api/v1/experiments/${e.id}`, viewer.apiKey)).status, 200);
    assert.equal((await call("POST", "/api/v1/experiments", viewer.apiKey, experimentBody(champion, challenger))).status, 403);
    assert.equal((await call("PUT", `/api/v1/experiments/${e.id}`, viewer.apiKey, { status: "active" })).status, 403);
    const editor = await svc.createUser(t.tenantId, "editor");
    assert.equal((await call("PUT", `/api/v1/experiments/${e.id}`, editor.apiKey, { status: "active" })).status, 200);
    const [row] = await svc.sql("SELECT status FROM experiments WHERE tenant_id = $1 AND id = $2", [t.tenantId, e.id]);
    assert.equal(row.status, "active");
  });
});

describe("Recommend under an experiment", () => {
  test("the response carries the experiment, the variant's model scores, and the trace records it", async () => {
    const { t, offers, champion, challenger, key } = await setup();
    const e = await create("experiments", experimentBody(champion, challenger, { status: "active" }), t);
    const who = customersFor(splitOf(e), [HOLDOUT_VARIANT, CHAMPION_VARIANT, "b"]);
    const modelOf: Record<string, string> = { [HOLDOUT_VARIANT]: HOLDOUT_BASELINE_MODEL.id, [CHAMPION_VARIANT]: champion.id, b: challenger.id };
    const byPriority = [...offers].sort((a, b) => b.priority - a.priority).map((o) => o.id);
    const byValue = [...offers].sort((a, b) => b.businessValue - a.businessValue).map((o) => o.id);
    for (const [variant, customerId] of Object.entries(who)) {
      const res = await call("POST", "/api/v1/recommend", key, { customerId });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.experiment, { experimentId: e.id, id: e.id, key: e.key, variant });
      const ids = res.body.offers.map((o: any) => o.offerId);
      if (variant === HOLDOUT_VARIANT) assert.deepEqual(ids, byPriority, "the holdout baseline ranks by priority");
      if (variant === CHAMPION_VARIANT) assert.deepEqual(ids, byValue, "the champion ranks by businessValue");
      await svc.running.services.decisions.traces.flush();
      const trace = await call("GET", `/api/v1/decision-traces/${res.body.recommendationId}`, t.apiKey);
      assert.equal(trace.status, 200, JSON.stringify(trace.body));
      assert.deepEqual(trace.body.experiment, { experimentId: e.id, id: e.id, key: e.key, variant });
      assert.deepEqual(new Set(trace.body.scoringResults.map((s: any) => s.modelId)), new Set([modelOf[variant]]), variant);
      const [row] = await svc.sql("SELECT experiment_id, experiment_variant FROM recommendations WHERE tenant_id = $1 AND id = $2", [t.tenantId, res.body.recommendationId]);
      assert.deepEqual(row, { experiment_id: e.id, experiment_variant: variant });
    }
  });

  test("coverage: a flowId covers that flow only; without one, flows scoring with the champion; none otherwise", async () => {
    const { t, champion, challenger, flow, key } = await setup();
    const third = await model(t, "relevance");
    const otherFlow = await create("decision-flows", {
      name: unique("flow"),
      key: unique("flow"),
      status: "active",
      config: { nodes: [{ type: "score", modelKey: third.key }] },
    }, t);
    const byModel = await create("experiments", experimentBody(champion, challenger, { status: "active", holdoutPercent: 0 }), t);
    const onFlow = await create("experiments", experimentBody(third, challenger, { status: "active", flowId: otherFlow.id }), t);
    const first = await call("POST", "/api/v1/recommend", key, { customerId: "c1", flow: flow.key });
    assert.equal(first.body.experiment.id, byModel.id);
    const second = await call("POST", "/api/v1/recommend", key, { customerId: "c1", flow: otherFlow.key });
    assert.equal(second.body.experiment.id, onFlow.id);
    const off = await call("PUT", `/api/v1/experiments/${byModel.id}`, t.apiKey, { status: "paused" });
    assert.equal(off.status, 200);
    const none = await call("POST", "/api/v1/recommend", key, { customerId: "c1", flow: flow.key });
    assert.equal(none.body.experiment, null, "a paused experiment covers nothing, at once (the snapshot was invalidated)");
    const [row] = await svc.sql("SELECT experiment_id FROM recommendations WHERE tenant_id = $1 AND id = $2", [t.tenantId, none.body.recommendationId]);
    assert.equal(row.experiment_id, null);
  });

  test("coverage follows the family: a flow naming any model of the champion's family is covered", async () => {
    const { t, champion, challenger, key } = await setup();
    const named = await model(t, "relevance");
    const promote = async (m: any, body: Record<string, unknown>) => {
      const res = await call("POST", `/api/v1/algorithm-models/${m.id}/promote`, t.apiKey, body);
      assert.equal(res.status, 200, JSON.stringify(res.body));
    };
    await promote(named, { toStatus: "challenger", family: "churn" });
    await promote(champion, { toStatus: "challenger", family: "churn" });
    await promote(champion, { toStatus: "champion" });
    const flow = await create("decision-flows", {
      name: unique("flow"),
      key: unique("flow"),
      status: "active",
      config: { nodes: [{ type: "score", modelKey: named.key }] },
    }, t);
    const e = await create("experiments", experimentBody(champion, challenger, { status: "active", holdoutPercent: 0 }), t);
    const res = await call("POST", "/api/v1/recommend", key, { customerId: "c1", flow: flow.key });
    assert.equal(res.body.experiment?.id, e.id, "the flow names a model of the family, whose champion is the experiment's");
  });

  test("a customer keeps the variant when the split changes (30 days in Redis); new customers follow the new split", async () => {
    const { t, champion, challenger, key } = await setup();
    const e = await create("experiments", experimentBody(champion, challenger, {
      status: "active",
      holdoutPercent: 0,
      trafficSplit: { championPct: 100 },
      challengers: [{ modelId: challenger.id, key: "b", trafficPct: 0 }],
    }), t);
    const early = ["s1", "s2", "s3", "s4", "s5"];
    for (const customerId of early) {
      assert.equal((await call("POST", "/api/v1/recommend", key, { customerId })).body.experiment.variant, CHAMPION_VARIANT);
    }
    const redis = svc.running.foundation.redis!;
    const ttl = await redis.ttl(tenantKey(t.tenantId, `exp:${e.id}:s1`));
    assert.ok(ttl > ASSIGNMENT_TTL_SECONDS - 60 && ttl <= ASSIGNMENT_TTL_SECONDS, `ttl ${ttl}`);
    assert.equal(await redis.get(tenantKey(t.tenantId, `exp:${e.id}:s1`)), CHAMPION_VARIANT);

    const moved = await call("PUT", `/api/v1/experiments/${e.id}`, t.apiKey, { trafficSplit: { championPct: 0 }, challengers: [{ modelId: challenger.id, key: "b", trafficPct: 100 }] });
    assert.equal(moved.status, 200, JSON.stringify(moved.body));
    for (const customerId of early) {
      const res = await call("POST", "/api/v1/recommend", key, { customerId });
      assert.equal(res.body.experiment.variant, CHAMPION_VARIANT, `${customerId} keeps its variant`);
    }
    for (const customerId of ["n1", "n2", "n3"]) {
      assert.equal((await call("POST", "/api/v1/recommend", key, { customerId })).body.experiment.variant, "b");
    }
    // A kept variant the experiment no longer has is replaced by the current split's answer.
    await call("PUT", `/api/v1/experiments/${e.id}`, t.apiKey, { challengers: [{ modelId: challenger.id, key: "c", trafficPct: 100 }] });
    assert.equal((await call("POST", "/api/v1/recommend", key, { customerId: "n1" })).body.experiment.variant, "c");
    assert.equal((await call("POST", "/api/v1/recommend", key, { customerId: "s1" })).body.experiment.variant, CHAMPION_VARIANT);
  });

  test("an experiment whose model was deleted covers nothing rather than degrade decisions", async () => {
    const { t, champion, challenger, key } = await setup();
    await create("experiments", experimentBody(champion, challenger, { status: "active" }), t);
    assert.ok((await call("POST", "/api/v1/recommend", key, { customerId: "c" })).body.experiment);
    assert.equal((await call("DELETE", `/api/v1/algorithm-models/${challenger.id}`, t.apiKey)).status, 204);
    const res = await call("POST", "/api/v1/recommend", key, { customerId: "c" });
    assert.equal(res.body.experiment, null);
    assert.equal(res.body.degraded, false);
  });

  test("across processes: an activation reaches the other process's snapshot, and both give a customer the same variant", async () => {
    const { t, champion, challenger, key } = await setup();
    const child = await startChildService(svc);
    try {
      const e = await create("experiments", experimentBody(champion, challenger), t);
      const before = await rest(child.baseUrl, "POST", "/api/v1/recommend", { key, body: { customerId: "x1" } });
      assert.equal(before.body.experiment, null, "a draft covers nothing (and the child has compiled its snapshot)");
      assert.equal((await call("PUT", `/api/v1/experiments/${e.id}`, t.apiKey, { status: "active" })).status, 200);
      let there: any = null;
      for (let i = 0; i < 50 && !there?.experiment; i++) {
        there = (await rest(child.baseUrl, "POST", "/api/v1/recommend", { key, body: { customerId: "x1" } })).body;
        if (!there.experiment) await new Promise((r) => setTimeout(r, 20));
      }
      assert.equal(there.experiment?.id, e.id, "the bus invalidated the child's snapshot");
      const here = await call("POST", "/api/v1/recommend", key, { customerId: "x1" });
      assert.equal(here.body.experiment.variant, there.experiment.variant);
    } finally {
      await child.stop();
    }
  });
});

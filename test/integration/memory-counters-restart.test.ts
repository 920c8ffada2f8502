import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createTestDatabase } from "../support/database.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { CHAMPION_VARIANT } from "../../src/core/index.js";
import { tenantCalls, unique, type Tenant } from "../support/tenant-calls.js";

/**
 * The single-node default without Redis keeps its decisioning counters in memory and saves them to
 * PostgreSQL (counter_snapshots), and its ended sessions in PostgreSQL: a service stopped gracefully
 * and started again on the same database goes on from where it stopped.
 */

let databaseUrl: string;
let svc: TestService;
const { call, create, dataKey } = tenantCalls(() => svc.baseUrl);
/** A service without Redis on this file's database: the state the previous one saved is loaded. */
const startWithoutRedis = () => startTestService({ redisUrl: null }, databaseUrl);



async function recommend(key: string, body: Record<string, unknown>) {
  const res = await call("POST", "/api/v1/recommend", key, body);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const decisionsUsed = async (t: Tenant) => (await call("GET", "/api/v1/workspace/usage", t.apiKey)).body.decisionsUsed;

/** What the first process set up and served, for the second to check. */
const before1 = {} as {
  budgeted: { t: Tenant; key: string; offerId: string };
  adaptive: { t: Tenant; key: string; offerId: string };
  experiment: { t: Tenant; key: string; experimentId: string };
};

before(async () => {
  databaseUrl = await createTestDatabase();
  svc = await startWithoutRedis();
  assert.equal(svc.running.foundation.redis, null, "the in-memory counters are under test");
});
after(() => svc.stop());

describe("in-memory counters across a restart of the single node", () => {
  test("first process: a budget of one impression is spent, evidence learned, a variant assigned", async () => {
    {
      const t = await svc.createTenant();
      const offer = await create("offers", { name: unique("offer"), status: "active" }, t);
      await create("budgets", { name: "launch", maxImpressions: 1 }, t);
      const key = await dataKey(t);
      assert.deepEqual((await recommend(key, { customerId: "c1" })).offers.map((o: any) => o.offerId), [offer.id]);
      before1.budgeted = { t, key, offerId: offer.id };
    }
    {
      const t = await svc.createTenant();
      const offer = await create("offers", { name: unique("offer"), status: "active" }, t);
      await create("algorithm-models", { name: "Learns", key: "learns", type: "adaptive", config: {} }, t);
      await create("decision-flows", {
        name: "adaptive",
        key: "adaptive",
        status: "active",
        config: { nodes: [{ type: "candidates", offerIds: [offer.id] }, { type: "score", modelKey: "learns" }, { type: "rank", count: 1 }] },
        autoAssemble: false,
      }, t);
      const key = await dataKey(t);
      const first = await recommend(key, { customerId: "a1" });
      await recommend(key, { customerId: "a2" });
      await recommend(key, { customerId: "a3" });
      const click = await call("POST", "/api/v1/respond", key, { customerId: "a1", outcome: "click", idempotencyKey: "a1-click", recommendationId: first.recommendationId, rank: 1 });
      assert.equal(click.status, 200, JSON.stringify(click.body));
      // 1 success in 3 trials: the Beta(1, 1) mean is 2/5 (an empty model's is 1/2).
      const fourth = await recommend(key, { customerId: "a4" });
      assert.ok(Math.abs(fourth.offers[0].propensity - 2 / 5) < 1e-9, `learned before the restart: ${fourth.offers[0].propensity}`);
      before1.adaptive = { t, key, offerId: offer.id };
    }
    {
      const t = await svc.createTenant();
      await create("offers", { name: unique("offer"), status: "active" }, t);
      const weights = { priority: 0, businessValue: 1, propensity: 0, impact: 0, relevance: 0 };
      const champion = await create("algorithm-models", { name: "champion", key: "champion", type: "formula", config: { weights } }, t);
      const challenger = await create("algorithm-models", { name: "challenger", key: "challenger", type: "formula", config: { weights } }, t);
      await create("decision-flows", {
        name: "by champion",
        key: "by-champion",
        status: "active",
        config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: "champion" }, { type: "rank", count: 1 }] },
      }, t);
      const e = await create("experiments", {
        name: "split",
        championModelId: champion.id,
        status: "active",
        holdoutPercent: 0,
        trafficSplit: { championPct: 100 },
        challengers: [{ modelId: challenger.id, key: "b", trafficPct: 0 }],
      }, t);
      const key = await dataKey(t);
      assert.equal((await recommend(key, { customerId: "s1" })).experiment.variant, CHAMPION_VARIANT);
      const moved = await call("PUT", `/api/v1/experiments/${e.id}`, t.apiKey, { trafficSplit: { championPct: 0 }, challengers: [{ modelId: challenger.id, key: "b", trafficPct: 100 }] });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      before1.experiment = { t, key, experimentId: e.id };
    }
    await svc.stop();
    svc = await startWithoutRedis();
  });

  test("after the restart the spent budget refuses the next Recommend", async () => {
    const { t, key, offerId } = before1.budgeted;
    const again = await call("POST", "/api/v1/recommend?explain=true", key, { customerId: "c2" });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.deepEqual(again.body.offers, [], "the budget of one impression was spent before the restart");
    const refused = again.body.rejectedOffers.find((r: any) => r.offerId === offerId);
    assert.match(refused?.reason ?? "", /^budget \S+ impressions exhausted: 1\/1$/, JSON.stringify(again.body.rejectedOffers));
    assert.equal(await decisionsUsed(t), 1, "the decision count survived too");
  });

  test("after the restart the adaptive model scores from what it learned before", async () => {
    const { key } = before1.adaptive;
    const res = await recommend(key, { customerId: "a5" });
    // 1 success in 4 trials (the fourth decision counted before the stop): (1 + 1) / (4 + 2).
    assert.ok(Math.abs(res.offers[0].propensity - 2 / 6) < 1e-9, `evidence after the restart: ${res.offers[0].propensity}`);
  });

  test("after the restart a customer keeps the variant assigned before it, though the split has changed", async () => {
    const { key, experimentId } = before1.experiment;
    const kept = await recommend(key, { customerId: "s1" });
    assert.deepEqual(kept.experiment, { ...kept.experiment, experimentId, variant: CHAMPION_VARIANT });
    assert.equal((await recommend(key, { customerId: "n1" })).experiment.variant, "b", "a new customer follows the new split");
  });

  test("a workspace reset is saved at once: a process started after it finds no counters of the tenant", async () => {
    const { t } = before1.budgeted;
    assert.equal(await decisionsUsed(t), 1);
    const reset = await call("POST", "/api/v1/workspace/reset", t.apiKey, { confirm: t.tenantId });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    // Without a stop of this one: what a crash right after the reset would leave for the next start.
    const next = await startWithoutRedis();
    try {
      const usage = await rest(next.baseUrl, "GET", "/api/v1/workspace/usage", { key: t.apiKey });
      assert.equal(usage.body.decisionsUsed, 0, "the count from before the reset did not come back");
      const [row] = await next.sql("SELECT count(*)::int AS n FROM counter_snapshots WHERE tenant_id = $1", [t.tenantId]);
      assert.equal(row.n, 0);
    } finally {
      await next.stop();
    }
  });

  test("a sign-out holds after a restart: the next process refuses a replayed copy of the cookie", async () => {
    const t = await svc.createTenant();
    const [user] = await svc.sql("SELECT token_version FROM users WHERE id = $1", [t.userId]);
    const issued = await svc.running.services.sessions.issuer.issue({ tenantId: t.tenantId, userId: t.userId, role: "admin", tokenVersion: user.token_version });
    const headers = { cookie: `ds_session=${issued.token}`, "x-requested-with": "test" };
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/offers", { headers })).status, 200);
    assert.equal((await rest(svc.baseUrl, "POST", "/api/auth/sign-out", { headers })).status, 204);
    const next = await startWithoutRedis();
    try {
      const replay = await rest(next.baseUrl, "GET", "/api/v1/offers", { headers });
      assert.equal(replay.status, 401);
      assert.equal(replay.headers.get("x-error-reason"), "SESSION_ENDED");
    } finally {
      await next.stop();
    }
  });
});

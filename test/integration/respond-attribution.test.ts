import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

let svc: TestService;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;

async function create(path: string, body: Record<string, unknown>, tenant: Tenant) {
  const res = await rest(svc.baseUrl, "POST", `/api/v1/${path}`, { key: tenant.apiKey, body });
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** A tenant with two active offers (the first outranks the second), a creative for each, and a data-plane key. */
async function setup() {
  const t = await svc.createTenant();
  const web = await create("channels", { name: unique("web") }, t);
  const first = await create("offers", { name: unique("first"), status: "active", priority: 90 }, t);
  const second = await create("offers", { name: unique("second"), status: "active", priority: 10 }, t);
  const creatives = [];
  for (const offer of [first, second]) creatives.push(await create("creatives", { name: unique("banner"), offerId: offer.id, channelId: web.id }, t));
  const key = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: t.apiKey, body: { name: unique("sdk") } })).body.key;
  const respond = async (body: Record<string, unknown>) => {
    const res = await rest(svc.baseUrl, "POST", "/api/v1/respond", { key, body: { idempotencyKey: randomUUID(), ...body } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const recommend = async (customerId: string) => (await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key, body: { customerId, limit: 1 } })).body;
  return { t, web, first, second, creatives, respond, recommend };
}

before(async () => {
  svc = await startTestService();
});
after(() => svc.stop());

describe("rung 3 of the attribution ladder (spec 4.4)", () => {
  test("an impression recorded through Respond after the latest recommendation is what a rank-only outcome attributes to", async () => {
    const { web, first, second, creatives, respond, recommend } = await setup();
    const rec = await recommend("ivy");
    assert.equal(rec.offers[0].offerId, first.id);
    const shown = await respond({ customerId: "ivy", outcome: "impression", creativeId: creatives[1].id, rank: 1 });
    assert.deepEqual([shown.offerId, shown.rank], [second.id, 1]);

    const click = await respond({ customerId: "ivy", outcome: "click", recommendationId: randomUUID(), rank: 1 });
    assert.equal(click.offerId, second.id, "the impression is newer than the recommendation");
    assert.equal(click.creativeId, creatives[1].id);
    assert.equal(click.channelId, web.id);
    assert.equal(click.recommendationId ?? null, null, "the impression belonged to no recommendation");
    assert.equal(click.status, "recorded", "the impression is the customer's exposure to the offer");

    const later = await recommend("ivy");
    const afterRec = await respond({ customerId: "ivy", outcome: "click", recommendationId: randomUUID(), rank: 1 });
    assert.deepEqual([afterRec.offerId, afterRec.recommendationId], [later.offers[0].offerId, later.recommendationId], "now the recommendation is newer");

    // Any outcome type of the impression category is an impression row, not only `impression`.
    await respond({ customerId: "ivy", outcome: "delivery", creativeId: creatives[1].id, rank: 1 });
    const afterDelivery = await respond({ customerId: "ivy", outcome: "click", recommendationId: randomUUID(), rank: 1 });
    assert.equal(afterDelivery.offerId, second.id);
  });

  test("an impression row at another rank, of another customer, or an outcome that is not an impression never attributes", async () => {
    const { t, first, creatives, respond, recommend } = await setup();
    await recommend("jo");
    await respond({ customerId: "jo", outcome: "impression", creativeId: creatives[1].id, rank: 2 });
    await respond({ customerId: "kim", outcome: "impression", creativeId: creatives[1].id, rank: 1 });
    await respond({ customerId: "jo", outcome: "dismiss", creativeId: creatives[1].id, rank: 1 });
    const click = await respond({ customerId: "jo", outcome: "click", recommendationId: randomUUID(), rank: 1 });
    assert.equal(click.offerId, first.id);
    const res = await rest(svc.baseUrl, "POST", "/api/v1/respond", {
      key: (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: t.apiKey, body: { name: unique("sdk") } })).body.key,
      body: { customerId: "lee", outcome: "click", idempotencyKey: randomUUID(), recommendationId: randomUUID(), rank: 1 },
    });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.message, "No recommendation found for customer=lee rank=1");
  });

  test("the latest impression at a rank is found through an index, not by walking the customer's history", async () => {
    const db = svc.running.foundation.db;
    const plan = await db.transaction(async (transaction) => {
      // The test table is small enough for a sequential scan to win; the question is which index.
      await db.query("SET LOCAL enable_seqscan = off", { transaction });
      const [rows] = await db.query(
        `EXPLAIN SELECT offer_id FROM interactions WHERE tenant_id = $1 AND customer_id = $2 AND rank = $3 AND outcome = ANY($4::text[])
         ORDER BY created_at DESC LIMIT 1`,
        { bind: [randomUUID(), "anyone", 1, ["impression"]], transaction },
      );
      return rows as Array<{ "QUERY PLAN": string }>;
    });
    assert.match(plan.map((r) => r["QUERY PLAN"]).join("\n"), /interactions_customer_rank/);
  });
});

describe("recorded_without_adaptation (spec 2.5)", () => {
  test("is only for a positive outcome without an exposure; negative, neutral and impression outcomes are recorded", async () => {
    const { t, creatives, respond } = await setup();
    await create("outcome-types", { name: "Hover", key: "hover", category: "neutral" }, t);
    const unexposed = (outcome: string) => respond({ customerId: unique("cold"), outcome, creativeId: creatives[0].id });
    assert.equal((await unexposed("click")).status, "recorded_without_adaptation");
    assert.equal((await unexposed("conversion")).status, "recorded_without_adaptation");
    assert.equal((await unexposed("dismiss")).status, "recorded");
    assert.equal((await unexposed("hover")).status, "recorded");
    assert.equal((await unexposed("impression")).status, "recorded");
  });
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService } from "../support/child-service.js";
import { rest, grpcClient, connectClient } from "../support/clients.js";
import { create as createMessage } from "@bufbuild/protobuf";
import { pino } from "pino";
import { DecisionService, RecommendRequestSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { AuditLog } from "../../src/audit/audit-log.js";
import { AuditStore } from "../../src/audit/audit-store.js";
import { createRedisCounters, type Counters } from "../../src/decisions/counters.js";
import { createDecisions } from "../../src/decisions/decisions.js";
import type { TenantContext } from "../../src/platform/context.js";
import { tenantKey } from "../../src/platform/redis.js";
import { bucketSpace, contextBucket } from "../../src/core/index.js";
import { MAX_BUCKETS_PER_SPACE } from "../../src/decisions/bucket-registry.js";

let svc: TestService;

type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;

async function post(path: string, body: unknown, key: string, baseUrl = svc.baseUrl) {
  return rest(baseUrl, "POST", path, { key, body });
}

async function create(path: string, body: Record<string, unknown>, tenant: Tenant) {
  const res = await post(`/api/v1/${path}`, body, tenant.apiKey);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

/** An active flow `key` that scores one offer with the model `modelKey` and returns it. */
async function oneOfferFlow(tenant: Tenant, key: string, offerId: string, modelKey: string) {
  return create("decision-flows", {
    name: key,
    key,
    status: "active",
    config: { nodes: [{ type: "candidates", offerIds: [offerId] }, { type: "score", modelKey }, { type: "rank", count: 1 }] },
    autoAssemble: false,
  }, tenant);
}

/** A key with no scopes: data plane only (spec 5.2). */
async function dataKey(tenant: Tenant): Promise<string> {
  const res = await post("/api/v1/api-keys", { name: unique("sdk") }, tenant.apiKey);
  assert.equal(res.status, 201);
  return res.body.key;
}


before(async () => {
  svc = await startTestService();
});
after(() => svc.stop());

describe("POST /api/v1/recommend out of the box", () => {
  test("active offers, no flow: a ranked answer, and rows Respond can attribute at once", async () => {
    const t = await svc.createTenant();
    const offers = [];
    for (const priority of [10, 20, 30]) offers.push(await create("offers", { name: unique("offer"), status: "active", priority }, t));
    const draft = await create("offers", { name: unique("draft") }, t);
    const key = await dataKey(t);
    const res = await post("/api/v1/recommend", { customerId: "cust-1" }, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const body = res.body;
    assert.match(body.recommendationId, /^[0-9a-f-]{36}$/);
    assert.match(body.interactionId, /^[0-9a-f-]{36}$/);
    assert.equal(body.customerId, "cust-1");
    assert.equal(body.degraded, false);
    assert.deepEqual(body.offers.map((o: any) => o.rank), [1, 2, 3]);
    assert.deepEqual(new Set(body.offers.map((o: any) => o.offerId)), new Set(offers.map((o) => o.id)));
    assert.ok(!body.offers.some((o: any) => o.offerId === draft.id));
    for (const o of body.offers) {
      assert.equal(o.propensitySource, "cold_start");
      assert.equal(typeof o.score, "number");
      assert.equal(typeof o.offerName, "string");
      assert.equal(o.creativeId, null);
    }
    assert.equal(Object.hasOwn(body, "rejectedOffers"), false, "explain=true adds rejectedOffers (spec 4.4); without it there is none, not even []");
    const [rec] = await svc.sql("SELECT customer_id, interaction_id FROM recommendations WHERE tenant_id = $1 AND id = $2", [t.tenantId, body.recommendationId]);
    assert.equal(rec.interaction_id, body.interactionId);
    const impressions = await svc.sql("SELECT rank, offer_id, outcome FROM interactions WHERE tenant_id = $1 AND recommendation_id = $2 ORDER BY rank", [t.tenantId, body.recommendationId]);
    assert.deepEqual(impressions.map((i) => [i.rank, i.offer_id, i.outcome]), body.offers.map((o: any) => [o.rank, o.offerId, "impression"]));
  });

  test("rejectedOffers is there exactly when explain=true, [] when nothing was rejected, on REST and Connect JSON", async () => {
    const t = await svc.createTenant();
    await create("offers", { name: unique("only"), status: "active" }, t);
    const key = await dataKey(t);
    const connect = (explain: boolean) =>
      rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.DecisionService/Recommend", { key, body: { customerId: "c", explain } });
    const answers = {
      restPlain: await post("/api/v1/recommend", { customerId: "c" }, key),
      restExplain: await post("/api/v1/recommend?explain=true", { customerId: "c" }, key),
      restExplainInBody: await post("/api/v1/recommend", { customerId: "c", explain: true }, key),
      getExplain: await rest(svc.baseUrl, "GET", "/api/v1/recommend?customerId=c&explain=true", { key: t.apiKey }),
      connectPlain: await connect(false),
      connectExplain: await connect(true),
    };
    for (const [name, res] of Object.entries(answers)) {
      assert.equal(res.status, 200, `${name}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.offers.length, 1, name);
      if (name.endsWith("Plain")) assert.equal(Object.hasOwn(res.body, "rejectedOffers"), false, `${name}: no explain, no rejectedOffers`);
      else assert.deepEqual(res.body.rejectedOffers, [], `${name}: explain=true and nothing rejected gives []`);
    }
    assert.equal(answers.connectPlain.headers.get("content-length"), String(Buffer.byteLength(JSON.stringify(answers.connectPlain.body))));
    const viaClient = await connectClient(DecisionService, svc.baseUrl).recommend({ customerId: "c", explain: true }, { headers: { "x-api-key": key } });
    assert.deepEqual(viaClient.rejectedOffers, [], "a Connect client reads the rewritten answer");
    assert.equal(viaClient.offers.length, 1);
  });

  test("explain=true adds rejectedOffers with stage and reason; GET is control plane", async () => {
    const t = await svc.createTenant();
    await create("offers", { name: unique("on"), status: "active" }, t);
    const paused = await create("offers", { name: unique("paused"), status: "paused" }, t);
    const key = await dataKey(t);
    const res = await post("/api/v1/recommend?explain=true", { customerId: "c" }, key);
    assert.equal(res.status, 200);
    const rejected = res.body.rejectedOffers.find((r: any) => r.offerId === paused.id);
    assert.equal(rejected.stage, "eligibility");
    assert.match(rejected.reason, /paused/);
    assert.equal(rejected.offerName, paused.name);

    const viaGet = await rest(svc.baseUrl, "GET", "/api/v1/recommend?customerId=c&explain=true&limit=1", { key: t.apiKey });
    assert.equal(viaGet.status, 200, JSON.stringify(viaGet.body));
    assert.equal(viaGet.body.offers.length, 1);
    assert.ok(viaGet.body.rejectedOffers.length >= 1);
    const [row] = await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND recommendation_id = $2", [t.tenantId, viaGet.body.recommendationId]);
    assert.equal(row.n, 1, "GET writes impression rows too");
    const denied = await rest(svc.baseUrl, "GET", "/api/v1/recommend?customerId=c", { key });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.title, "Forbidden");
  });

  test("bad requests are 400 naming the field, on the data plane's structured shape", async () => {
    const t = await svc.createTenant();
    const key = await dataKey(t);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /^customerId: is required/],
      [{ customerId: "c", channel: "carrier-pigeon" }, /^channel: unknown channel carrier-pigeon/],
      [{ customerId: "c", flow: "nope" }, /^flow: unknown or inactive decision flow nope/],
      [{ customerId: "c", limit: 0 }, /^limit: must be between 1 and 50/],
      [{ customerId: "c", placements: ["nowhere"] }, /^placements\[0\]: unknown placement nowhere/],
      [{ customerId: "c", limit: "three" }, /^limit: /],
    ];
    for (const [body, message] of cases) {
      const res = await post("/api/v1/recommend", body, key);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(res.body.error.code, "BAD_REQUEST");
      assert.equal(res.body.error.status, 400);
      assert.match(res.body.error.message, message);
    }
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM recommendations WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);
  });
});

describe("channels and placements", () => {
  test("a named channel needs a creative for it; placements fill slots without interaction rows", async () => {
    const t = await svc.createTenant();
    const email = await create("channels", { name: "email", type: "email" }, t);
    const web = await create("channels", { name: "web", type: "web" }, t);
    const hero = await create("placements", { name: "hero", channelId: web.id }, t);
    const side = await create("placements", { name: "side", channelId: web.id }, t);
    const mailOffer = await create("offers", { name: unique("mail"), status: "active" }, t);
    const webOffer = await create("offers", { name: unique("web"), status: "active" }, t);
    const bare = await create("offers", { name: unique("bare"), status: "active" }, t);
    const mailCreative = await create("creatives", { name: "mail", offerId: mailOffer.id, channelId: email.id }, t);
    await create("creatives", { name: "hero", offerId: webOffer.id, channelId: web.id, placementId: hero.id }, t);
    await create("creatives", { name: "side", offerId: mailOffer.id, channelId: web.id, placementId: side.id }, t);
    const key = await dataKey(t);

    const byEmail = await post("/api/v1/recommend?explain=true", { customerId: "c", channel: "email" }, key);
    assert.equal(byEmail.status, 200, JSON.stringify(byEmail.body));
    assert.deepEqual(byEmail.body.offers.map((o: any) => [o.offerId, o.creativeId, o.channelId]), [[mailOffer.id, mailCreative.id, email.id]]);
    const stages = Object.fromEntries(byEmail.body.rejectedOffers.map((r: any) => [r.offerId, r.stage]));
    assert.equal(stages[bare.id], "channel");
    assert.equal(stages[webOffer.id], "channel");

    const slots = await post("/api/v1/recommend", { customerId: "c", placements: ["hero", side.id], limit: 1 }, key);
    assert.equal(slots.status, 200, JSON.stringify(slots.body));
    assert.match(slots.body.recommendationId, /^[0-9a-f-]{36}$/);
    assert.equal(slots.body.interactionId, null);
    assert.deepEqual(slots.body.offers.map((o: any) => [o.placementId, o.offerId]), [[hero.id, webOffer.id], [side.id, mailOffer.id]]);
    const rows = await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND recommendation_id = $2", [t.tenantId, slots.body.recommendationId]);
    assert.equal(rows[0].n, 0, "multi-placement responses write no interaction rows (spec 4.4)");
    const stored = await svc.sql("SELECT multi_placement FROM recommendations WHERE tenant_id = $1 AND id = $2", [t.tenantId, slots.body.recommendationId]);
    assert.equal(stored[0].multi_placement, true);

    // Without a channel in the request, a creative on a channel the customer refused is not chosen.
    await rest(svc.baseUrl, "PUT", "/api/v1/customers/no-web", { key: t.apiKey, body: { attributes: { consent: { web: false } } } });
    const anywhere = await post("/api/v1/recommend?explain=true", { customerId: "no-web", limit: 5 }, key);
    assert.equal(anywhere.status, 200, JSON.stringify(anywhere.body));
    const served = Object.fromEntries(anywhere.body.offers.map((o: any) => [o.offerId, o.channelId]));
    assert.equal(served[mailOffer.id], email.id, "the offer goes out by e-mail, not on the web");
    assert.equal(webOffer.id in served, false);
    const refused = anywhere.body.rejectedOffers.find((r: any) => r.offerId === webOffer.id);
    assert.equal(refused.stage, "consent");
    assert.deepEqual(refused.detail, { channelId: web.id, consentKey: "web" });
  });
});

describe("caps and budgets under concurrency", () => {
  test("a frequency cap of one is never overshot by parallel requests", async () => {
    const t = await svc.createTenant();
    const capped = await create("offers", { name: unique("capped"), status: "active", priority: 90 }, t);
    await create("contact-policies", { name: "once a day", config: { scope: "offer", maxImpressions: 1, windowSeconds: 86400 } }, t);
    const key = await dataKey(t);
    const answers = await Promise.all(Array.from({ length: 12 }, () => post("/api/v1/recommend", { customerId: "same" }, key)));
    assert.ok(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => a.body)));
    assert.equal(answers.filter((a) => a.body.offers.some((o: any) => o.offerId === capped.id)).length, 1);
    const other = await post("/api/v1/recommend", { customerId: "someone-else" }, key);
    assert.equal(other.body.offers[0].offerId, capped.id, "the cap is per customer");
    const again = await post("/api/v1/recommend?explain=true", { customerId: "same" }, key);
    assert.equal(again.body.rejectedOffers.find((r: any) => r.offerId === capped.id).stage, "frequency_cap");
  });

  test("a global impression budget serves exactly its limit across customers and two processes", async () => {
    const t = await svc.createTenant();
    const a = await create("offers", { name: unique("a"), status: "active" }, t);
    const b = await create("offers", { name: unique("b"), status: "active" }, t);
    await create("budgets", { name: "launch", maxImpressions: 5 }, t);
    const key = await dataKey(t);
    const child = await startChildService(svc);
    try {
      const answers = await Promise.all(
        Array.from({ length: 16 }, (_, i) => post("/api/v1/recommend", { customerId: `c${i}` }, key, i % 2 ? child.baseUrl : svc.baseUrl)),
      );
      assert.ok(answers.every((x) => x.status === 200), JSON.stringify(answers.map((x) => x.body)));
      const served = answers.flatMap((x) => x.body.offers.map((o: any) => o.offerId));
      assert.equal(served.length, 5);
      assert.ok(served.every((id: string) => id === a.id || id === b.id));
    } finally {
      await child.stop();
    }
  });
});

describe("channel caps and budgets without a channel in the request", () => {
  /** A tenant with an e-mail and a web channel, and `offers` offers whose only creative goes out by e-mail. */
  async function emailOnly(offers = 1) {
    const t = await svc.createTenant();
    const email = await create("channels", { name: "email", type: "email" }, t);
    const web = await create("channels", { name: "web", type: "web" }, t);
    const mailed = [];
    for (let i = 0; i < offers; i++) {
      const offer = await create("offers", { name: unique("mailed"), status: "active", priority: 90 - i }, t);
      await create("creatives", { name: unique("mail"), offerId: offer.id, channelId: email.id }, t);
      mailed.push(offer);
    }
    return { t, email, web, mailed, key: await dataKey(t) };
  }

  test("a channel cap of one per customer: the first channel-less Recommend serves the offer, the second rejects it at frequency_cap", async () => {
    const { t, email, mailed: [offer], key } = await emailOnly();
    const cap = await create("contact-policies", { name: "one mail a day", config: { scope: "channel", scopeId: email.id, maxImpressions: 1, windowSeconds: 86400 } }, t);
    const first = await post("/api/v1/recommend", { customerId: "same" }, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.offers.map((o: any) => [o.offerId, o.channelId]), [[offer.id, email.id]]);
    const second = await post("/api/v1/recommend?explain=true", { customerId: "same" }, key);
    assert.deepEqual(second.body.offers, []);
    const rejected = second.body.rejectedOffers.find((r: any) => r.offerId === offer.id);
    assert.equal(rejected.stage, "frequency_cap");
    assert.equal(rejected.detail.policyId, cap.id);
    assert.equal(rejected.detail.channelId, email.id);
    // The channel-less impression counted on the channel's own counter: a request naming it is capped too.
    const named = await post("/api/v1/recommend?explain=true", { customerId: "same", channel: "email" }, key);
    assert.equal(named.body.rejectedOffers.find((r: any) => r.offerId === offer.id).stage, "frequency_cap");
    const other = await post("/api/v1/recommend", { customerId: "someone-else" }, key);
    assert.equal(other.body.offers[0]?.offerId, offer.id, "the cap is per customer");
  });

  test("two offers of one decision on a capped channel count against one counter, as with the channel named", async () => {
    const { t, email, mailed, key } = await emailOnly(2);
    await create("contact-policies", { name: "one mail a day", config: { scope: "channel", scopeId: email.id, maxImpressions: 1, windowSeconds: 86400 } }, t);
    const plain = await post("/api/v1/recommend?explain=true", { customerId: "a" }, key);
    const named = await post("/api/v1/recommend?explain=true", { customerId: "b", channel: "email" }, key);
    for (const res of [plain, named]) {
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.offers.length, 1, "the first reserved takes the channel's one unit");
      const other = mailed.find((o) => o.id !== res.body.offers[0].offerId)!;
      assert.equal(res.body.rejectedOffers.find((r: any) => r.offerId === other.id).stage, "frequency_cap");
    }
  });

  test("a channel budget of one impression: served once, then rejected at contact_policy; a conversion counts against it", async () => {
    const { t, email, mailed: [offer], key } = await emailOnly();
    const budget = await create("budgets", { name: "mail launch", scope: "channel", scopeId: email.id, maxImpressions: 1, maxConversions: 10 }, t);
    const first = await post("/api/v1/recommend", { customerId: "a" }, key);
    assert.deepEqual(first.body.offers.map((o: any) => o.offerId), [offer.id]);
    const second = await post("/api/v1/recommend?explain=true", { customerId: "b" }, key);
    assert.deepEqual(second.body.offers, []);
    const rejected = second.body.rejectedOffers.find((r: any) => r.offerId === offer.id);
    assert.equal(rejected.stage, "contact_policy");
    assert.deepEqual([rejected.detail.policyId, rejected.detail.channelId], [budget.id, email.id]);
    const redis = svc.running.foundation.redis!;
    assert.equal(await redis.get(`t:{${t.tenantId}}:bg:${budget.id}:impressions`), "1");
    const sale = await post("/api/v1/respond", { customerId: "a", outcome: "conversion", idempotencyKey: "sale", recommendationId: first.body.recommendationId, rank: 1 }, key);
    assert.equal(sale.status, 200, JSON.stringify(sale.body));
    assert.equal(await redis.get(`t:{${t.tenantId}}:bg:${budget.id}:conversions`), "1");
  });

  test("a creative with only a placement goes out on the placement's channel: its impression and its conversions count there", async () => {
    const t = await svc.createTenant();
    const email = await create("channels", { name: "email", type: "email" }, t);
    const footer = await create("placements", { name: "footer", channelId: email.id }, t);
    const offer = await create("offers", { name: unique("footer"), status: "active" }, t);
    const creative = await create("creatives", { name: "footer", offerId: offer.id, placementId: footer.id }, t);
    const budget = await create("budgets", { name: "mail", scope: "channel", scopeId: email.id, maxImpressions: 5, maxConversions: 10 }, t);
    const key = await dataKey(t);
    const rec = await post("/api/v1/recommend", { customerId: "a" }, key);
    assert.deepEqual(rec.body.offers.map((o: any) => [o.creativeId, o.channelId]), [[creative.id, email.id]]);
    const redis = svc.running.foundation.redis!;
    assert.equal(await redis.get(`t:{${t.tenantId}}:bg:${budget.id}:impressions`), "1");
    await post("/api/v1/respond", { customerId: "a", outcome: "conversion", idempotencyKey: "by-rank", recommendationId: rec.body.recommendationId, rank: 1 }, key);
    await post("/api/v1/respond", { customerId: "a", outcome: "conversion", idempotencyKey: "by-creative", creativeId: creative.id }, key);
    assert.equal(await redis.get(`t:{${t.tenantId}}:bg:${budget.id}:conversions`), "2");
  });

  test("a channel budget of three impressions serves at most three of ten parallel channel-less Recommends on two processes", async () => {
    const { t, email, mailed: [offer], key } = await emailOnly();
    const budget = await create("budgets", { name: "mail launch", scope: "channel", scopeId: email.id, maxImpressions: 3 }, t);
    const child = await startChildService(svc);
    try {
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => post("/api/v1/recommend", { customerId: `c${i}` }, key, i % 2 ? child.baseUrl : svc.baseUrl)),
      );
      assert.ok(answers.every((x) => x.status === 200), JSON.stringify(answers.map((x) => x.body)));
      assert.equal(answers.filter((x) => x.body.offers.some((o: any) => o.offerId === offer.id)).length, 3);
    } finally {
      await child.stop();
    }
    assert.equal(await svc.running.foundation.redis!.get(`t:{${t.tenantId}}:bg:${budget.id}:impressions`), "3");
  });
});

describe("a decision that fails gives back what it took", () => {
  /** Every cap and budget counter of the tenant in Redis, without the zeros a give-back leaves. */
  async function capsAndBudgets(tenantId: string): Promise<Record<string, string>> {
    const redis = svc.running.foundation.redis!;
    const prefix = redis.options.keyPrefix ?? "";
    const keys = (await redis.keys(`${prefix}${tenantKey(tenantId, "*")}`)).map((k) => k.slice(prefix.length)).filter((k) => /:(fc|bg):/.test(k));
    const values = keys.length ? await redis.mget(...keys) : [];
    return Object.fromEntries(keys.map((k, i) => [k, values[i]!]).filter(([, v]) => v !== "0").sort());
  }

  /**
   * Recommend over the real Redis counters, wrapped: the reads answer as if nothing had been
   * decided yet (so the offers rank by priority, and a concurrent decision seems to have taken the
   * top offer's cap between read and reserve: a refill follows), and the second reservation round
   * fails, as Redis would mid-decision; `failRelease` breaks the give-back too. The log is kept.
   */
  function failingRecommend(failRelease: boolean) {
    const real = createRedisCounters(svc.running.foundation.redis!);
    let rounds = 0;
    return recommendWith({
      ...real,
      evidence: { ...real.evidence, readEvidence: async (_tenantId, keys) => keys.map(() => null) },
      reservations: {
        ...real.reservations,
        read: async () => ({}),
        reserve: async (tenantId, groups) => {
          if (++rounds === 2) throw new Error("injected: the second reservation round failed");
          return real.reservations.reserve(tenantId, groups);
        },
        release: async (tenantId, reservations) => {
          if (failRelease) throw new Error("injected: the give-back failed");
          return real.reservations.release(tenantId, reservations);
        },
      },
    });
  }

  /** Recommend over the given counters in a decisions module of its own, its error log kept. */
  function recommendWith(counters: Counters) {
    const f = svc.running.foundation;
    const logged: Array<Record<string, any>> = [];
    const logger = pino({ level: "error" }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const decisions = createDecisions({
      db: f.db,
      bus: f.bus,
      logger,
      counters,
      audit: new AuditLog(new AuditStore(f.db)),
      decisionConfig: svc.running.services.catalog.decisionConfig,
      seedTenant: svc.running.services.catalog.seedTenant,
      pool: null,
      minTreeWalksForPool: Number.MAX_SAFE_INTEGER,
      decisionQuota: null,
    });
    const impl = decisions.services.find((r) => r.service === DecisionService)!.impl as { recommend(ctx: TenantContext, req: unknown): Promise<unknown> };
    const recommend = (tenantId: string, requestId: string, customerId: string) =>
      impl.recommend(
        { tenantId, userId: null, actorName: "test", role: "admin", principal: { kind: "internal" }, requestId },
        createMessage(RecommendRequestSchema, { customerId, limit: 2 }),
      );
    return { recommend, logged, close: () => decisions.close() };
  }

  const storedRows = async (tenantId: string) => {
    const [recs, imps] = await Promise.all(
      ["recommendations", "interactions"].map(async (table) => (await svc.sql(`SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1`, [tenantId]))[0].n),
    );
    return { recs, imps };
  };

  test("a failure in the second reservation round releases the first round's caps and budgets", async () => {
    const t = await svc.createTenant();
    const top = await create("offers", { name: unique("top"), status: "active", priority: 90 }, t);
    for (const priority of [50, 10]) await create("offers", { name: unique("offer"), status: "active", priority }, t);
    await create("contact-policies", { name: "once a day", config: { scope: "offer", maxImpressions: 1, windowSeconds: 86400 } }, t);
    await create("budgets", { name: "launch", maxImpressions: 100 }, t);
    // The top offer's cap is spent, which the failing service's stale read does not see.
    const first = await post("/api/v1/recommend", { customerId: "dee", limit: 1 }, await dataKey(t));
    assert.deepEqual(first.body.offers.map((o: any) => o.offerId), [top.id]);
    const before = await capsAndBudgets(t.tenantId);
    assert.equal(Object.keys(before).length, 2, JSON.stringify(before));

    const failing = failingRecommend(false);
    try {
      await assert.rejects(failing.recommend(t.tenantId, "req-release", "dee"), /the second reservation round failed/);
      assert.deepEqual(failing.logged, [], "the give-back worked: nothing to report");
    } finally {
      await failing.close();
    }
    assert.deepEqual(await capsAndBudgets(t.tenantId), before, "the second offer's cap and its budget unit were given back");
  });

  test("a give-back that fails is logged with the request id; the caller gets the first error", async () => {
    const t = await svc.createTenant();
    for (const priority of [90, 50, 10]) await create("offers", { name: unique("offer"), status: "active", priority }, t);
    await create("contact-policies", { name: "once a day", config: { scope: "offer", maxImpressions: 1, windowSeconds: 86400 } }, t);
    await post("/api/v1/recommend", { customerId: "eve", limit: 1 }, await dataKey(t));

    const failing = failingRecommend(true);
    try {
      await assert.rejects(failing.recommend(t.tenantId, "req-leak", "eve"), /the second reservation round failed/);
      const [entry] = failing.logged;
      assert.equal(entry?.msg, "failed decision: caps and budgets not given back", JSON.stringify(failing.logged));
      assert.equal(entry.requestId, "req-leak");
      assert.equal(entry.tenantId, t.tenantId);
      assert.match(entry.err.message, /the give-back failed/);
      assert.equal(entry.reservations.length, 1, "the one unit the first round took");
    } finally {
      await failing.close();
    }
  });

  test("a count that fails after the rows were written takes them back, with the caps the decision took", async () => {
    const t = await svc.createTenant();
    for (const priority of [90, 50]) await create("offers", { name: unique("offer"), status: "active", priority }, t);
    await create("contact-policies", { name: "once a day", config: { scope: "offer", maxImpressions: 1, windowSeconds: 86400 } }, t);
    const real = createRedisCounters(svc.running.foundation.redis!);
    let written = false;
    const failing = recommendWith({
      ...real,
      decisionCounter: {
        ...real.decisionCounter,
        // Without a quota the count and the write run together: this one fails once the write is committed.
        countDecision: async (tenantId) => {
          while ((await storedRows(tenantId)).recs === 0) await new Promise((r) => setTimeout(r, 5));
          written = true;
          throw new Error("injected: the count failed");
        },
      },
    });
    try {
      await assert.rejects(failing.recommend(t.tenantId, "req-count", "fay"), /the count failed/);
      assert.ok(written, "the rows were written before the count failed");
      assert.deepEqual(failing.logged, [], "the take-back worked: nothing to report");
    } finally {
      await failing.close();
    }
    assert.deepEqual(await storedRows(t.tenantId), { recs: 0, imps: 0 }, "neither the recommendation nor its impressions stay");
    assert.deepEqual(await capsAndBudgets(t.tenantId), {}, "both offers' caps were given back");
    const ok = await post("/api/v1/recommend", { customerId: "fay", limit: 2 }, await dataKey(t));
    assert.equal(ok.body.offers.length, 2, "the caps are free again");
  });
});

describe("adaptive context buckets", () => {
  const bucketBy = ["context.a", "context.b"];

  /** A tenant whose only flow scores with an adaptive model bucketed by two request-context values. */
  async function bucketedTenant() {
    const t = await svc.createTenant();
    const offer = await create("offers", { name: unique("offer"), status: "active" }, t);
    await create("algorithm-models", { name: "By a and b", key: "by-ab", type: "adaptive", config: { bucketBy } }, t);
    await oneOfferFlow(t, "bucketed", offer.id, "by-ab");
    return { t, offer, key: await dataKey(t) };
  }

  /** The tenant's evidence hashes in Redis: bucket → the offer's trials. */
  async function evidenceHashes(tenantId: string, offerId: string): Promise<Record<string, number>> {
    const redis = svc.running.foundation.redis!;
    const prefix = redis.options.keyPrefix ?? "";
    const hashes = (await redis.keys(`${prefix}${tenantKey(tenantId, "ad:*")}`)).map((k) => k.slice(prefix.length));
    const trials = await Promise.all(hashes.map((h) => redis.hget(h, `${offerId}:t`)));
    return Object.fromEntries(hashes.map((h, i) => [h.slice(tenantKey(tenantId, "ad:").length), Number(trials[i])]));
  }

  test("values with the delimiter in them no longer share a bucket, and no raw value reaches a key", async () => {
    const { t, offer, key } = await bucketedTenant();
    for (const [i, context] of [{ a: "x,y", b: "z" }, { a: "x", b: "y,z" }].entries()) {
      const res = await post("/api/v1/recommend", { customerId: `c${i}`, context }, key);
      assert.deepEqual(res.body.offers.map((o: any) => o.offerId), [offer.id]);
    }
    const hashes = await evidenceHashes(t.tenantId, offer.id);
    assert.deepEqual(Object.values(hashes), [1, 1], `two buckets of one trial each (they were both "x,y,z"): ${JSON.stringify(hashes)}`);
    for (const bucket of Object.keys(hashes)) assert.match(bucket, /^[0-9a-f]{16}$/);
  });

  test("past the cap per bucket space, a new bucket counts in the all-contexts bucket and the trace says so", async () => {
    const { t, offer, key } = await bucketedTenant();
    const known = { a: "known", b: "1" };
    await post("/api/v1/recommend", { customerId: "first", context: known }, key);
    const redis = svc.running.foundation.redis!;
    const registry = tenantKey(t.tenantId, `adb:${bucketSpace(bucketBy)}`);
    await redis.sadd(registry, ...Array.from({ length: MAX_BUCKETS_PER_SPACE - 1 }, (_, i) => `minted-${i}`));
    assert.equal(await redis.scard(registry), MAX_BUCKETS_PER_SPACE);

    const fresh = { a: "one", b: "too many" };
    const over = await post("/api/v1/recommend", { customerId: "late", context: fresh }, key);
    assert.equal(over.status, 200, JSON.stringify(over.body));
    assert.equal(await redis.scard(registry), MAX_BUCKETS_PER_SPACE, "the registry did not grow");
    const [stored] = await svc.sql("SELECT offers->0->>'bucket' AS bucket FROM recommendations WHERE tenant_id = $1 AND id = $2", [t.tenantId, over.body.recommendationId]);
    assert.equal(stored.bucket, "*", "Respond's success will land where the trial did");
    const overAgain = (await post("/api/v1/recommend", { customerId: "later", context: fresh }, key)).body;
    assert.equal(overAgain.degraded, false);
    assert.ok(Math.abs(overAgain.offers[0].propensity - 1 / 3) < 1e-9, `scored from the all-contexts evidence, 0 of 1: ${overAgain.offers[0].propensity}`);
    await post("/api/v1/recommend", { customerId: "again", context: known }, key);
    const knownBucket = contextBucket(bucketBy, { context: known, customer: {} });
    assert.deepEqual(await evidenceHashes(t.tenantId, offer.id), { [knownBucket]: 2, "*": 2 }, "an admitted bucket goes on counting in its own hash");

    await svc.running.services.decisions.traces.flush();
    const trace = (await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${overAgain.recommendationId}`, { key: t.apiKey })).body;
    assert.deepEqual(trace.inputs.bucketsOverCap, [contextBucket(bucketBy, { context: fresh, customer: {} })]);
    assert.deepEqual(trace.inputs.adaptiveCounts, { [`${offer.id}|*`]: { successes: 0, trials: 1 } }, "the replay reads the bucket the decision used");
    assert.ok(Math.abs(trace.scoringResults[0].propensity - 1 / 3) < 1e-9);
  });
});

describe("flows, models and the three doors", () => {
  test("a flow with an imported logistic model ranks by it; gRPC and Connect give the same shape", async () => {
    const t = await svc.createTenant();
    const young = await create("offers", { name: unique("young"), status: "active", productType: "starter" }, t);
    const senior = await create("offers", { name: unique("senior"), status: "active", productType: "premium" }, t);
    await create("algorithm-models", {
      name: "LR",
      key: "lr",
      type: "logistic_regression",
      config: { intercept: -1, coefficients: { "customer.age": 0.05, "offer.priority": 0.01 } },
    }, t);
    await oneOfferFlow(t, "scored", senior.id, "lr");
    await rest(svc.baseUrl, "PUT", "/api/v1/customers/alice", { key: t.apiKey, body: { attributes: { age: 40 } } });
    const key = await dataKey(t);
    const res = await post("/api/v1/recommend", { customerId: "alice", flow: "scored" }, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.offers.map((o: any) => o.offerId), [senior.id]);
    assert.equal(res.body.offers[0].propensitySource, "model");
    const expected = 1 / (1 + Math.exp(-(-1 + 0.05 * 40 + 0.01 * 50)));
    assert.ok(Math.abs(res.body.offers[0].propensity - expected) < 1e-9, `${res.body.offers[0].propensity} vs ${expected}`);
    assert.match(res.body.flowId, /^[0-9a-f-]{36}$/);
    assert.ok(young.id);

    const headers = { headers: { "x-api-key": key } };
    const viaGrpc = await grpcClient(DecisionService, svc.grpcAddress).recommend({ customerId: "alice", flow: "scored" }, headers);
    const viaConnect = await connectClient(DecisionService, svc.baseUrl).recommend({ customerId: "alice", flow: "scored" }, headers);
    assert.deepEqual(viaGrpc.offers.map((o) => o.offerId), [senior.id]);
    assert.deepEqual(viaConnect.offers.map((o) => [o.offerId, o.propensity]), viaGrpc.offers.map((o) => [o.offerId, o.propensity]));
  });

  test("another tenant's offers and traces are never seen", async () => {
    const mine = await svc.createTenant();
    const theirs = await svc.createTenant();
    const offer = await create("offers", { name: unique("mine"), status: "active" }, mine);
    const res = await post("/api/v1/recommend", { customerId: "c" }, await dataKey(theirs));
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.offers, []);
    const own = await post("/api/v1/recommend", { customerId: "c" }, await dataKey(mine));
    assert.equal(own.body.offers[0].offerId, offer.id);
    await svc.running.services.decisions.traces.flush();
    const foreign = await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${own.body.recommendationId}`, { key: theirs.apiKey });
    assert.equal(foreign.status, 404);
  });
});

describe("decision traces (spec 2.16, 4.11)", () => {
  test("written after the answer, found by recommendation id, with the stages' results and inputs", async () => {
    const t = await svc.createTenant();
    const offer = await create("offers", { name: unique("traced"), status: "active" }, t);
    const res = await post("/api/v1/recommend", { customerId: "traced-customer", context: { page: "home" } }, await dataKey(t));
    await svc.running.services.decisions.traces.flush();
    const trace = await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${res.body.recommendationId}`, { key: t.apiKey });
    assert.equal(trace.status, 200, JSON.stringify(trace.body));
    const body = trace.body;
    assert.equal(body.recommendationId, res.body.recommendationId);
    assert.equal(body.customerId, "traced-customer");
    assert.equal(body.scoringResults[0].offerId, offer.id);
    assert.equal(body.scoringResults[0].propensitySource, "cold_start");
    assert.ok(Array.isArray(body.scoringResults[0].explanations));
    assert.equal(body.selectedOffers[0].offerId, offer.id);
    assert.ok(body.qualificationResults.some((q: any) => q.offerId === offer.id && q.passed));
    assert.deepEqual(body.rejectedOffers, []);
    assert.equal(body.degradedScoring, false);
    assert.equal(body.rankingWeights.score, 1);
    assert.match(body.inputsHash, /^[0-9a-f]+$/);
    assert.match(body.policyVersionHash, /^[0-9a-f]+$/);
    assert.equal(body.inputs.context.page, "home");
    assert.equal(body.inputs.seed, res.body.recommendationId);

    const list = await rest(svc.baseUrl, "GET", "/api/v1/decision-traces?customerId=traced-customer&limit=10", { key: t.apiKey });
    assert.equal(list.status, 200);
    assert.equal(list.body.pagination.total, 1);
    assert.equal(list.body.data[0].selectedCount, 1);

    // The trace is explained against the configuration the decision ran with, not today's (ADR 4).
    const later = await create("offers", { name: unique("added later"), status: "active", priority: 99 }, t);
    const second = await post("/api/v1/recommend", { customerId: "traced-customer" }, await dataKey(t));
    await svc.running.services.decisions.traces.flush();
    const again = (await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${res.body.recommendationId}`, { key: t.apiKey })).body;
    assert.deepEqual(again.scoringResults.map((s: any) => s.offerId), [offer.id]);
    assert.equal(again.policyVersionHash, body.policyVersionHash);
    assert.equal(again.inputsHash, body.inputsHash);
    const newer = (await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${second.body.recommendationId}`, { key: t.apiKey })).body;
    assert.notEqual(newer.policyVersionHash, body.policyVersionHash);
    assert.deepEqual(new Set(newer.scoringResults.map((s: any) => s.offerId)), new Set([offer.id, later.id]));
    assert.equal(newer.selectedOffers[0].offerId, second.body.offers[0].offerId);

    await rest(svc.baseUrl, "PUT", "/api/v1/tenant-settings", { key: t.apiKey, body: { decisionTraceEnabled: false } });
    const untraced = await post("/api/v1/recommend", { customerId: "traced-customer" }, await dataKey(t));
    await svc.running.services.decisions.traces.flush();
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${untraced.body.recommendationId}`, { key: t.apiKey })).status, 404);
    const bad = await rest(svc.baseUrl, "PUT", "/api/v1/tenant-settings", { key: t.apiKey, body: { decisionTraceSampleRate: 2 } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /^decisionTraceSampleRate: /);
  });
});


describe("decision quota and workspace reset", () => {
  test("a spent quota is a clear non-retryable 400; reset deletes the data and zeroes the counter", async () => {
    const limited = await startTestService({ decisionQuota: 2 });
    try {
      const t = await limited.createTenant();
      const key = await dataKey2(limited, t);
      await rest(limited.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name: "only", status: "active" } });
      for (let i = 0; i < 2; i++) assert.equal((await rest(limited.baseUrl, "POST", "/api/v1/recommend", { key, body: { customerId: `c${i}` } })).status, 200);
      const spent = await rest(limited.baseUrl, "POST", "/api/v1/recommend", { key, body: { customerId: "c3" } });
      assert.equal(spent.status, 400);
      assert.match(spent.body.error.message, /2 lifetime decisions/);
      assert.equal(spent.headers.get("retry-after"), null);
      const [{ n }] = await limited.sql("SELECT count(*)::int AS n FROM recommendations WHERE tenant_id = $1", [t.tenantId]);
      assert.equal(n, 2, "with a quota the count comes first: the refused decision wrote nothing");
      const usage = await rest(limited.baseUrl, "GET", "/api/v1/workspace/usage", { key: t.apiKey });
      assert.deepEqual(usage.body, { decisionsUsed: 2, decisionQuota: 2 });

      assert.equal((await rest(limited.baseUrl, "POST", "/api/v1/workspace/reset", { key: t.apiKey, body: { confirm: "wrong" } })).status, 400);
      const reset = await rest(limited.baseUrl, "POST", "/api/v1/workspace/reset", { key: t.apiKey, body: { confirm: t.tenantId } });
      assert.equal(reset.status, 200, JSON.stringify(reset.body));
      assert.equal(reset.body.decisionsUsed, 0);
      const offers = await rest(limited.baseUrl, "GET", "/api/v1/offers", { key: t.apiKey });
      assert.deepEqual(offers.body.data, []);
      const outcomeTypes = await rest(limited.baseUrl, "GET", "/api/v1/outcome-types", { key: t.apiKey });
      assert.equal(outcomeTypes.body.data.length, 5, "defaults restored");
      assert.equal((await rest(limited.baseUrl, "POST", "/api/v1/recommend", { key, body: { customerId: "c4" } })).status, 200);
    } finally {
      await limited.stop();
    }
  });
});

describe("configuration reaches every process", () => {
  test("an offer activated on one process is recommended by another", async () => {
    const t = await svc.createTenant();
    const key = await dataKey(t);
    const child = await startChildService(svc);
    try {
      assert.deepEqual((await post("/api/v1/recommend", { customerId: "c" }, key, child.baseUrl)).body.offers, []);
      const offer = await create("offers", { name: unique("fresh"), status: "active" }, t);
      let seen: string[] = [];
      for (let i = 0; i < 50 && !seen.includes(offer.id); i++) {
        seen = (await post("/api/v1/recommend", { customerId: "c" }, key, child.baseUrl)).body.offers.map((o: any) => o.offerId);
        if (!seen.includes(offer.id)) await new Promise((r) => setTimeout(r, 20));
      }
      assert.deepEqual(seen, [offer.id]);
    } finally {
      await child.stop();
    }
  });
});

async function dataKey2(service: TestService, tenant: Tenant): Promise<string> {
  const res = await rest(service.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "sdk" } });
  return res.body.key;
}

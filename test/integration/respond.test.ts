import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService } from "../support/child-service.js";
import { grpcClient, rest, rpcError } from "../support/clients.js";
import { OutcomeService } from "../../gen/decisioning/v1/decisions_pb.js";

let svc: TestService;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;

async function post(path: string, body: unknown, key: string, opts: { baseUrl?: string; headers?: Record<string, string> } = {}) {
  return rest(opts.baseUrl ?? svc.baseUrl, "POST", path, { key, body, headers: opts.headers });
}

async function create(path: string, body: Record<string, unknown>, tenant: Tenant) {
  const res = await post(`/api/v1/${path}`, body, tenant.apiKey);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function dataKey(tenant: Tenant): Promise<string> {
  return (await post("/api/v1/api-keys", { name: unique("sdk") }, tenant.apiKey)).body.key;
}


/** Successes and trials of an offer's adaptive evidence in the all-contexts bucket, read from Redis. */
async function evidence(tenantId: string, offerId: string): Promise<{ s: number; t: number }> {
  const v = await svc.running.foundation.redis!.hmget(`t:{${tenantId}}:ad:*`, `${offerId}:s`, `${offerId}:t`);
  return { s: Number(v[0] ?? 0), t: Number(v[1] ?? 0) };
}

/** A tenant with active offers (by priority) and a data-plane key. */
async function setup(priorities: number[] = [50]) {
  const t = await svc.createTenant();
  const offers = [];
  for (const priority of priorities) offers.push(await create("offers", { name: unique("offer"), status: "active", priority }, t));
  return { t, offers, key: await dataKey(t) };
}

before(async () => {
  svc = await startTestService();
});
after(() => svc.stop());

describe("POST /api/v1/respond", () => {
  test("records an outcome attributed by recommendationId and rank, with every field of 2.5", async () => {
    const { t, offers, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "ana" }, key)).body;
    const res = await post("/api/v1/respond", {
      customerId: "ana",
      outcome: "click",
      idempotencyKey: "k-1",
      recommendationId: rec.recommendationId,
      rank: 1,
      context: { page: "home", device: "explicit" },
      attributes: { device: "from-attributes", segment: "gold" },
      outcomeDetails: { button: "cta" },
      conversionValue: 12.5,
      channel: "web",
      deviceType: "mobile",
      responseTime: 340,
      timestamp: "2026-11-20T10:00:00Z",
    }, key);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const r = res.body;
    assert.equal(r.status, "recorded");
    assert.equal(r.offerId, offers[0].id);
    assert.equal(r.recommendationId, rec.recommendationId);
    assert.equal(r.interactionId, rec.interactionId);
    assert.equal(r.rank, 1);
    assert.equal(r.direction, "inbound");
    assert.deepEqual(r.context, { page: "home", device: "explicit", segment: "gold", channel: "web", deviceType: "mobile" });
    assert.deepEqual(r.outcomeDetails, { button: "cta" });
    assert.equal(r.conversionValue, 12.5);
    assert.equal(r.responseTime, 340);
    assert.equal(r.timestamp, "2026-11-20T10:00:00Z");
    assert.equal(r.idempotencyKey, "k-1");
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 1, t: 1 });
  });

  test("the idempotency key: header or body (body wins); a replay returns the original and changes nothing", async () => {
    const { t, offers, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "bo" }, key)).body;
    const first = await post("/api/v1/respond", { customerId: "bo", outcome: "click", recommendationId: rec.recommendationId, rank: 1 }, key, { headers: { "idempotency-key": "from-header" } });
    assert.equal(first.body.idempotencyKey, "from-header");
    const both = await post("/api/v1/respond", { customerId: "bo", outcome: "click", idempotencyKey: "from-body", recommendationId: rec.recommendationId, rank: 1 }, key, { headers: { "idempotency-key": "from-header" } });
    assert.equal(both.body.idempotencyKey, "from-body");
    assert.equal(both.body.status, "recorded");
    const replay = await post("/api/v1/respond", { customerId: "bo", outcome: "dismiss", idempotencyKey: "from-body", recommendationId: rec.recommendationId, rank: 1, timestamp: "2026-01-01T00:00:00Z" }, key);
    assert.equal(replay.status, 200);
    assert.equal(replay.body.status, "already_recorded");
    assert.equal(replay.body.id, both.body.id);
    assert.equal(replay.body.outcome, "click", "the original record, whatever the replay's payload");
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 1, t: 1 }, "two clicks on one impression: one trial, one success");
    const missing = await post("/api/v1/respond", { customerId: "bo", outcome: "click", recommendationId: rec.recommendationId, rank: 1 }, key);
    assert.equal(missing.status, 400);
    assert.match(missing.body.error.message, /^idempotencyKey: is required/);
  });

  test("a replay this process has seen is answered from memory; a workspace reset starts its keys afresh", async () => {
    const { t, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "mem" }, key)).body;
    const body = { customerId: "mem", outcome: "click", idempotencyKey: "mem-1", recommendationId: rec.recommendationId, rank: 1 };
    const first = (await post("/api/v1/respond", body, key)).body;
    assert.equal(first.status, "recorded");
    // Behind the service's back: a replay that went to the database would now record anew.
    await svc.sql("DELETE FROM interactions WHERE tenant_id = $1 AND idempotency_key = $2", [t.tenantId, "mem-1"]);
    const replay = (await post("/api/v1/respond", body, key)).body;
    assert.deepEqual([replay.status, replay.id], ["already_recorded", first.id]);

    const reset = await rest(svc.baseUrl, "POST", "/api/v1/workspace/reset", { key: t.apiKey, body: { confirm: t.tenantId } });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    await create("offers", { name: unique("after reset"), status: "active" }, t);
    const again = (await post("/api/v1/recommend", { customerId: "mem" }, key)).body;
    const afresh = (await post("/api/v1/respond", { ...body, recommendationId: again.recommendationId }, key)).body;
    assert.equal(afresh.status, "recorded", "the reset deleted the record, and the process forgot it");
    assert.notEqual(afresh.id, first.id);
  });

  test("an interactionId that is not an id is a 400 naming it, and nothing is written", async () => {
    const { t, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "iid" }, key)).body;
    const res = await post("/api/v1/respond", { customerId: "iid", outcome: "click", idempotencyKey: "iid-1", recommendationId: rec.recommendationId, rank: 1, interactionId: "not-an-id" }, key);
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.error.message, /interactionId: must be an id/);
    const rows = await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND idempotency_key = 'iid-1'", [t.tenantId]);
    assert.equal(rows[0].n, 0);
  });

  test("over gRPC, a timestamp outside google.protobuf.Timestamp's range or an infinite responseTime is a 400 naming it, and nothing is written", async () => {
    const { t, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "far-future" }, key)).body;
    const client = grpcClient(OutcomeService, svc.grpcAddress);
    const base = { customerId: "far-future", outcome: "click", recommendationId: rec.recommendationId, rank: 1 };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base, idempotencyKey: "ts-1", timestamp: { seconds: 253_402_300_800n, nanos: 0 } }, /timestamp: must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z/],
      [{ ...base, idempotencyKey: "ts-2", timestamp: { seconds: -62_135_596_801n, nanos: 0 } }, /timestamp: must be from/],
      [{ ...base, idempotencyKey: "ts-3", responseTime: Infinity }, /responseTime: must be a finite number/],
    ];
    for (const [req, message] of cases) {
      const err = await rpcError(client.respond(req, { headers: { "x-api-key": key } }));
      assert.equal(err.code, 3, JSON.stringify(err));
      assert.match(err.message, message);
    }
    const rows = await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND idempotency_key LIKE 'ts-%'", [t.tenantId]);
    assert.equal(rows[0].n, 0);
    const ok = await client.respond({ ...base, idempotencyKey: "ts-4", timestamp: { seconds: 253_402_300_799n, nanos: 0 } }, { headers: { "x-api-key": key } });
    assert.equal(ok.status, "recorded", "the range's last second is stored");
  });

  test("a replay of a key another process recorded: answered from the database, even when its recommendation is gone since", async () => {
    const { t, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "far" }, key)).body;
    const rec2 = (await post("/api/v1/recommend", { customerId: "far" }, key)).body;
    const body = { customerId: "far", outcome: "click", idempotencyKey: "far-1", recommendationId: rec.recommendationId, rank: 1 };
    const body2 = { ...body, idempotencyKey: "far-2", recommendationId: rec2.recommendationId };
    // Both keys are recorded by another process; this one never sees them until the replays below.
    const child = await startChildService(svc);
    let first: any;
    let second: any;
    try {
      first = (await post("/api/v1/respond", body, key, { baseUrl: child.baseUrl })).body;
      second = (await post("/api/v1/respond", body2, key, { baseUrl: child.baseUrl })).body;
    } finally {
      await child.stop();
    }
    assert.deepEqual([first.status, second.status], ["recorded", "recorded"]);
    // This process never saw the key: the unique index tells it, and the stored record is the answer.
    const replay = (await post("/api/v1/respond", body, key)).body;
    assert.deepEqual([replay.status, replay.id], ["already_recorded", first.id]);

    // Retried under a customer id that attributes to nothing: the key's record still stands.
    const stray = { ...body2, customerId: "nobody-at-all" };
    const late = await post("/api/v1/respond", stray, key);
    assert.equal(late.status, 200, JSON.stringify(late.body));
    assert.deepEqual([late.body.status, late.body.id], ["already_recorded", second.id], "no attribution needed to replay");
    const fresh = await post("/api/v1/respond", { ...stray, idempotencyKey: "far-3" }, key);
    assert.equal(fresh.status, 400, "a fresh key still needs a recommendation to attribute to");
    assert.equal(fresh.body.error.reason, "NO_RECOMMENDATION");
    const rows = await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND idempotency_key LIKE 'far-%'", [t.tenantId]);
    assert.equal(rows[0].n, 2);
  });

  test("concurrent positive outcomes with keys of their own: one success per exposure, however they are batched", async () => {
    const { t, offers, key } = await setup();
    const recs = [];
    for (let i = 0; i < 20; i++) recs.push((await post("/api/v1/recommend", { customerId: `batch-${i}` }, key)).body);
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 0, t: 20 });
    // A click and a conversion on each exposure, all at once: the successes go to Redis together.
    const answers = await Promise.all(
      recs.flatMap((rec, i) =>
        ["click", "conversion"].map((outcome) =>
          post("/api/v1/respond", { customerId: `batch-${i}`, outcome, idempotencyKey: `${outcome}-${i}`, recommendationId: rec.recommendationId, rank: 1 }, key),
        ),
      ),
    );
    assert.ok(answers.every((a) => a.status === 200 && a.body.status === "recorded"), JSON.stringify(answers.find((a) => a.status !== 200)?.body));
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 20, t: 20 });
  });

  test("100 concurrent calls with one key on two processes: one row, one record id, counters move once", async () => {
    const { t, offers, key } = await setup();
    await create("budgets", { name: "conversions", scope: "offer", scopeId: offers[0].id, maxConversions: 1000, costPerConversion: 2, maxSpend: 1000 }, t);
    const rec = (await post("/api/v1/recommend", { customerId: "cy" }, key)).body;
    const child = await startChildService(svc);
    try {
      const body = { customerId: "cy", outcome: "conversion", idempotencyKey: "same-key", recommendationId: rec.recommendationId, rank: 1 };
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => post("/api/v1/respond", body, key, { baseUrl: i % 2 ? child.baseUrl : svc.baseUrl })));
      assert.ok(answers.every((a) => a.status === 200), JSON.stringify(answers.find((a) => a.status !== 200)?.body));
      assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
      assert.equal(answers.filter((a) => a.body.status === "recorded").length, 1);
      assert.equal(answers.filter((a) => a.body.status === "already_recorded").length, 99);
    } finally {
      await child.stop();
    }
    const rows = await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND idempotency_key = 'same-key'", [t.tenantId]);
    assert.equal(rows[0].n, 1);
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 1, t: 1 });
    const budget = (await rest(svc.baseUrl, "GET", "/api/v1/budgets", { key: t.apiKey })).body.data[0];
    const redis = svc.running.foundation.redis!;
    assert.equal(await redis.get(`t:{${t.tenantId}}:bg:${budget.id}:conversions`), "1");
    assert.equal(await redis.get(`t:{${t.tenantId}}:bg:${budget.id}:spend`), String(2 * 1_000_000));
  });
});

describe("the attribution ladder (spec 4.4)", () => {
  test("recommendationId+rank, then a legacy interaction id, then the latest recommendation for the rank", async () => {
    const { offers, key } = await setup([90, 10]);
    const older = (await post("/api/v1/recommend", { customerId: "di", limit: 2 }, key)).body;
    const latest = (await post("/api/v1/recommend", { customerId: "di", limit: 2 }, key)).body;
    const respond = (extra: Record<string, unknown>) => post("/api/v1/respond", { customerId: "di", outcome: "click", idempotencyKey: randomUUID(), ...extra }, key);

    const rung1 = await respond({ recommendationId: older.recommendationId, rank: 2 });
    assert.equal(rung1.body.recommendationId, older.recommendationId);
    assert.equal(rung1.body.offerId, older.offers[1].offerId);
    const rung2 = await respond({ recommendationId: older.interactionId, rank: 1 });
    assert.equal(rung2.body.recommendationId, older.recommendationId, "a legacy interaction id in recommendationId");
    const rung2b = await respond({ interactionId: older.interactionId, rank: 1 });
    assert.equal(rung2b.body.recommendationId, older.recommendationId);
    const rung3 = await respond({ recommendationId: randomUUID(), rank: 2 });
    assert.equal(rung3.body.recommendationId, latest.recommendationId);
    assert.equal(rung3.body.offerId, latest.offers[1].offerId);
    assert.ok(offers.length === 2);

    const none = await respond({ recommendationId: randomUUID(), rank: 3 });
    assert.equal(none.status, 400);
    assert.equal(none.body.error.message, "No recommendation found for customer=di rank=3");
    const stranger = await post("/api/v1/respond", { customerId: "nobody", outcome: "click", idempotencyKey: randomUUID(), recommendationId: latest.recommendationId, rank: 1 }, key);
    assert.equal(stranger.body.error.message, "No recommendation found for customer=nobody rank=1");
    assert.equal(stranger.body.error.recommendationId, latest.recommendationId, "spec 7: the structured body names the recommendation asked about");
  });

  test("another tenant's recommendation never attributes", async () => {
    const a = await setup();
    const b = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "ed" }, a.key)).body;
    const res = await post("/api/v1/respond", { customerId: "ed", outcome: "click", idempotencyKey: "x", recommendationId: rec.recommendationId, rank: 1 }, b.key);
    assert.equal(res.status, 400);
    assert.match(res.body.error.message, /^No recommendation found/);
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND idempotency_key IS NOT NULL", [b.t.tenantId]))[0].n, 0);
  });

  test("creativeId resolves the offer; without an exposure in 30 days the outcome teaches nothing", async () => {
    const { t, offers, key } = await setup();
    const web = await create("channels", { name: "web" }, t);
    const creative = await create("creatives", { name: "banner", offerId: offers[0].id, channelId: web.id }, t);
    const cold = await post("/api/v1/respond", { customerId: "fay", outcome: "click", idempotencyKey: "c1", creativeId: creative.id }, key);
    assert.equal(cold.status, 200, JSON.stringify(cold.body));
    assert.equal(cold.body.status, "recorded_without_adaptation");
    assert.equal(cold.body.offerId, offers[0].id);
    assert.equal(cold.body.channelId, web.id);
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 0, t: 0 });

    const impression = (ageDays: number) =>
      svc.sql(`INSERT INTO interactions (tenant_id, id, customer_id, offer_id, outcome, context_bucket, created_at)
           VALUES ($1, $2, $3, $4, 'impression', '*', now() - make_interval(days => $5))`, [t.tenantId, randomUUID(), "gus", offers[0].id, ageDays]);
    await impression(31);
    const stale = await post("/api/v1/respond", { customerId: "gus", outcome: "click", idempotencyKey: "c2", creativeId: creative.id }, key);
    assert.equal(stale.body.status, "recorded_without_adaptation");
    await impression(29);
    const fresh = await post("/api/v1/respond", { customerId: "gus", outcome: "click", idempotencyKey: "c3", creativeId: creative.id }, key);
    assert.equal(fresh.body.status, "recorded");
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 0, t: 0 }, "an impression no decision counted is no trial: a success cannot pass the trials");
    // Exposures count by when they happened, back from when the outcome happened (spec 2.5's lookback).
    const backfilled = await post("/api/v1/respond", { customerId: "hal", outcome: "impression", idempotencyKey: "c5", creativeId: creative.id, timestamp: "2026-01-01T00:00:00Z" }, key);
    assert.equal(backfilled.body.status, "recorded");
    const today = await post("/api/v1/respond", { customerId: "hal", outcome: "click", idempotencyKey: "c6", creativeId: creative.id }, key);
    assert.equal(today.body.status, "recorded_without_adaptation", "an impression a year old is not within 30 days");
    const thatWeek = await post("/api/v1/respond", { customerId: "hal", outcome: "click", idempotencyKey: "c7", creativeId: creative.id, timestamp: "2026-01-05T00:00:00Z" }, key);
    assert.equal(thatWeek.body.status, "recorded", "a click four days after the impression");
    const unknown = await post("/api/v1/respond", { customerId: "gus", outcome: "click", idempotencyKey: "c4", creativeId: randomUUID() }, key);
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.error.message, /^creativeId: unknown creative/);
  });
});

describe("references in the body (spec 2.5, 7)", () => {
  test("offerId, channelId and placementId must name the tenant's own: unknown or foreign ids are a 400 naming each, and nothing is written", async () => {
    const { t, offers, key } = await setup();
    const web = await create("channels", { name: "web" }, t);
    const hero = await create("placements", { name: "hero", channelId: web.id }, t);
    const creative = await create("creatives", { name: "banner", offerId: offers[0].id, channelId: web.id, placementId: hero.id }, t);
    const theirs = await setup();
    const theirChannel = await create("channels", { name: "web" }, theirs.t);
    const theirPlacement = await create("placements", { name: "hero" }, theirs.t);
    const written = async () => (await svc.sql("SELECT count(*)::int AS n FROM interactions WHERE tenant_id = $1 AND idempotency_key IS NOT NULL", [t.tenantId]))[0].n;
    const respond = (extra: Record<string, unknown>) => post("/api/v1/respond", { customerId: "ivy", outcome: "click", idempotencyKey: randomUUID(), creativeId: creative.id, ...extra }, key);

    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ offerId: randomUUID() }, /^offerId: unknown offer /],
      [{ offerId: theirs.offers[0].id }, /^offerId: unknown offer /],
      [{ channelId: theirChannel.id }, /^channelId: unknown channel /],
      [{ placementId: theirPlacement.id }, /^placementId: unknown placement /],
      [{ offerId: randomUUID(), channelId: randomUUID(), placementId: randomUUID() }, /^offerId: .+; channelId: .+; placementId: /],
    ];
    for (const [extra, message] of cases) {
      const res = await respond(extra);
      assert.equal(res.status, 400, JSON.stringify(extra));
      assert.match(res.body.error.message, message);
    }
    const rec = (await post("/api/v1/recommend", { customerId: "ivy" }, key)).body;
    const byRank = await post("/api/v1/respond", { customerId: "ivy", outcome: "click", idempotencyKey: randomUUID(), recommendationId: rec.recommendationId, rank: 1, placementId: randomUUID() }, key);
    assert.equal(byRank.status, 400);
    assert.match(byRank.body.error.message, /^placementId: unknown placement /);
    assert.equal(await written(), 0);

    const own = await respond({ offerId: offers[0].id, channelId: web.id, placementId: hero.id });
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.deepEqual([own.body.offerId, own.body.channelId, own.body.placementId], [offers[0].id, web.id, hero.id]);
  });

  test("an offer deleted after the recommendation: the id the recommendation carries still records; elsewhere it is unknown", async () => {
    const { t, offers, key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "jo" }, key)).body;
    assert.equal(rec.offers[0].offerId, offers[0].id);
    assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${offers[0].id}`, { key: t.apiKey, body: {} })).status, 204);
    const late = await post("/api/v1/respond", { customerId: "jo", outcome: "click", idempotencyKey: randomUUID(), recommendationId: rec.recommendationId, rank: 1, offerId: offers[0].id }, key);
    assert.equal(late.status, 200, JSON.stringify(late.body));
    assert.equal(late.body.offerId, offers[0].id);

    const other = await create("offers", { name: unique("live"), status: "active" }, t);
    const creative = await create("creatives", { name: "banner", offerId: other.id }, t);
    const elsewhere = await post("/api/v1/respond", { customerId: "jo", outcome: "click", idempotencyKey: randomUUID(), creativeId: creative.id, offerId: offers[0].id }, key);
    assert.equal(elsewhere.status, 400);
    assert.match(elsewhere.body.error.message, /^offerId: unknown offer /);
  });
});

describe("fields and defaults", () => {
  test("direction follows the outcome type; unknown outcomes, bad fields and the legacy alias", async () => {
    const { key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "hal" }, key)).body;
    const base = { customerId: "hal", recommendationId: rec.recommendationId, rank: 1 };
    const shown = await post("/api/v1/respond", { ...base, outcome: "impression", idempotencyKey: "d1" }, key);
    assert.equal(shown.body.direction, "outbound");
    const legacy = await post("/api/v1/capture", { ...base, interactionType: "click", idempotencyKey: "d2", direction: "outbound" }, key);
    assert.equal(legacy.status, 200, JSON.stringify(legacy.body));
    assert.equal(legacy.body.outcome, "click");
    assert.equal(legacy.body.direction, "outbound");
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...base, outcome: "teleported", idempotencyKey: "e1" }, /^outcome: unknown outcome type teleported/],
      [{ customerId: "hal", outcome: "click", idempotencyKey: "e2" }, /recommendationId: is required unless creativeId is given/],
      [{ ...base, outcome: "click", idempotencyKey: "e3", direction: "sideways" }, /^direction: must be inbound or outbound/],
      [{ ...base, outcome: "click", idempotencyKey: "e4", rank: 0 }, /^rank: must be at least 1/],
      [{ ...base, outcome: "click", idempotencyKey: "e5", conversionValue: "lots" }, /^conversionValue: /],
    ];
    for (const [body, message] of cases) {
      const res = await post("/api/v1/respond", body, key);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.error.message, message);
    }
  });
});

describe("POST /api/v1/respond/bulk", () => {
  test("per-item results in order, failures reported, default keys make a retried batch replay", async () => {
    const { key } = await setup();
    const rec = (await post("/api/v1/recommend", { customerId: "ivy" }, key)).body;
    const items = [
      { customerId: "ivy", outcome: "click", recommendationId: rec.recommendationId, rank: 1 },
      { customerId: "ivy", outcome: "nonsense", recommendationId: rec.recommendationId, rank: 1 },
      { customerId: "ivy", outcome: "dismiss", recommendationId: rec.recommendationId, rank: 1, idempotencyKey: "explicit" },
      { customerId: "ivy", outcome: "click", recommendationId: rec.recommendationId, rank: 9 },
    ];
    const first = await post("/api/v1/respond/bulk", { items }, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.results.map((r: any) => [r.index, r.status]), [[0, "recorded"], [1, "failed"], [2, "recorded"], [3, "failed"]]);
    assert.match(first.body.results[0].idempotencyKey, /^bulk:[0-9a-f]{64}$/);
    assert.equal(first.body.results[2].idempotencyKey, "explicit");
    assert.equal(first.body.results[1].error.status, 400);
    assert.equal(first.body.results[1].error.code, "BAD_REQUEST");
    assert.equal(first.body.results[1].error.reason, "VALIDATION_FAILED");
    assert.equal(first.body.results[3].error.reason, "NO_RECOMMENDATION");
    assert.match(first.body.results[1].error.message, /^outcome: unknown outcome type nonsense/);
    assert.equal(first.body.results[3].error.message, "No recommendation found for customer=ivy rank=9");
    assert.deepEqual([first.body.recorded, first.body.alreadyRecorded, first.body.failed], [2, 0, 2]);
    const again = await post("/api/v1/respond/bulk", { items }, key);
    assert.deepEqual(again.body.results.map((r: any) => r.status), ["already_recorded", "failed", "already_recorded", "failed"]);
    assert.equal(again.body.results[0].record.id, first.body.results[0].record.id);
    const tooMany = await post("/api/v1/respond/bulk", { items: Array.from({ length: 501 }, () => items[0]) }, key);
    assert.equal(tooMany.status, 400);
    assert.match(tooMany.body.error.message, /^items: must hold 1 to 500/);
  });
});

describe("learning from outcomes", () => {
  test("clicks raise an offer's propensity above an unclicked one; a dismissal suppresses it", async () => {
    const { t, offers, key } = await setup([50, 50]);
    await create("contact-policies", { name: "rest after dismiss", config: { type: "suppression", afterOutcomes: ["dismiss"], windowSeconds: 3600 } }, t);
    const [liked, ignored] = offers;
    for (let i = 0; i < 25; i++) {
      const rec = (await post("/api/v1/recommend", { customerId: `learner-${i}`, limit: 2 }, key)).body;
      const rank = rec.offers.find((o: any) => o.offerId === liked.id).rank;
      await post("/api/v1/respond", { customerId: `learner-${i}`, outcome: "click", idempotencyKey: `learn-${i}`, recommendationId: rec.recommendationId, rank }, key);
    }
    const next = (await post("/api/v1/recommend", { customerId: "newcomer", limit: 2 }, key)).body;
    assert.deepEqual(next.offers.map((o: any) => o.offerId), [liked.id, ignored.id]);
    const [top, bottom] = next.offers;
    assert.equal(top.propensitySource, "adaptation");
    assert.ok(top.propensity > 0.8 && bottom.propensity < 0.1, `${top.propensity} vs ${bottom.propensity}`);

    const rec = (await post("/api/v1/recommend", { customerId: "grumpy" }, key)).body;
    await post("/api/v1/respond", { customerId: "grumpy", outcome: "dismiss", idempotencyKey: "no-thanks", recommendationId: rec.recommendationId, rank: 1 }, key);
    const after = (await post("/api/v1/recommend?explain=true", { customerId: "grumpy", limit: 2 }, key)).body;
    assert.deepEqual(after.offers.map((o: any) => o.offerId), [ignored.id]);
    assert.equal(after.rejectedOffers.find((r: any) => r.offerId === liked.id).stage, "suppression");
  });

  test("one success per exposure: a click then a conversion on one impression, however attributed", async () => {
    const { t, offers, key } = await setup();
    const web = await create("channels", { name: "web" }, t);
    const creative = await create("creatives", { name: "banner", offerId: offers[0].id, channelId: web.id }, t);
    const respond = (body: Record<string, unknown>) => post("/api/v1/respond", { customerId: "lu", idempotencyKey: randomUUID(), ...body }, key);
    const shown = (await post("/api/v1/recommend", { customerId: "lu" }, key)).body;
    const onIt = { recommendationId: shown.recommendationId, rank: 1 };
    for (const outcome of [{ outcome: "click", ...onIt }, { outcome: "conversion", ...onIt }, { outcome: "conversion", creativeId: creative.id }]) {
      const res = await respond(outcome);
      assert.equal(res.body.status, "recorded", JSON.stringify(res.body));
    }
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 1, t: 1 }, "the creativeId-only conversion found the same exposure");

    const again = (await post("/api/v1/recommend", { customerId: "lu" }, key)).body;
    await respond({ outcome: "click", recommendationId: again.recommendationId, rank: 1 });
    assert.deepEqual(await evidence(t.tenantId, offers[0].id), { s: 2, t: 2 }, "a new impression can succeed again");
    const next = (await post("/api/v1/recommend", { customerId: "mo" }, key)).body;
    assert.equal(next.degraded, false);
    assert.ok(Math.abs(next.offers[0].propensity - 3 / 4) < 1e-9, `Beta(1+2, 1+0): ${next.offers[0].propensity}`);
  });

  test("evidence read with more successes than trials (a process's stale view) scores, capped, instead of degrading", async () => {
    const { t, offers, key } = await setup();
    await svc.running.foundation.redis!.hset(`t:{${t.tenantId}}:ad:*`, `${offers[0].id}:s`, 3, `${offers[0].id}:t`, 1);
    const res = (await post("/api/v1/recommend", { customerId: "nia" }, key)).body;
    assert.equal(res.degraded, false);
    assert.ok(Math.abs(res.offers[0].propensity - 2 / 3) < 1e-9, `read as 1 of 1, Beta(1+1, 1+0): ${res.offers[0].propensity}`);
  });

  test("conversions spend a maxConversions budget", async () => {
    const { t, offers, key } = await setup();
    await create("budgets", { name: "one sale", scope: "offer", scopeId: offers[0].id, maxConversions: 1 }, t);
    const rec = (await post("/api/v1/recommend", { customerId: "jo" }, key)).body;
    assert.equal(rec.offers.length, 1);
    await post("/api/v1/respond", { customerId: "jo", outcome: "conversion", idempotencyKey: "sale", recommendationId: rec.recommendationId, rank: 1 }, key);
    const after = (await post("/api/v1/recommend?explain=true", { customerId: "kim" }, key)).body;
    assert.deepEqual(after.offers, []);
    assert.equal(after.rejectedOffers[0].stage, "contact_policy");
  });
});

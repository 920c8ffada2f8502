import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { CustomerValueService } from "../../gen/decisioning/v1/customers_pb.js";
import { createLogger } from "../../src/platform/logger.js";
import { CLV_BATCH } from "../../src/customers/clv-service.js";
import { createCustomers } from "../../src/customers/customers.js";
import type { CustomerEventHistory, DeliveryEventHistory } from "../../src/customers/customer-activity.js";
import type { TenantContext } from "../../src/platform/context.js";
import type { UnifiedProfile } from "../../gen/decisioning/v1/customers_pb.js";
import { toJson } from "@bufbuild/protobuf";
import { ListValueSchema } from "@bufbuild/protobuf/wkt";

/**
 * CLV (spec 2.10, 4.14) and the unified profile (2.11, 4.15) on real Postgres and Redis: the record's
 * sources, the formulas on seeded interactions, the bulk run in keyset pages, the CLV tilt in
 * Recommend, the profile's sections, filters and structured form, bad input, and tenancy.
 */
let svc: TestService;
const logLines: string[] = [];

type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;
const DAY = 86_400_000;

/** A DELETE has no JSON body, so it says X-Requested-With to pass the CSRF guard, as a console would. */
const call = (method: string, path: string, key: string, body?: unknown) =>
  rest(svc.baseUrl, method, path, { key, body, headers: method === "DELETE" ? { "x-requested-with": "test" } : {} });

async function create(path: string, body: Record<string, unknown>, t: Tenant) {
  const res = await call("POST", `/api/v1/${path}`, t.apiKey, body);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}


/** Interactions as Recommend and Respond write them, at chosen times (neither can backdate). */
async function seedInteractions(tenantId: string, customerId: string, rows: Array<{ outcome: string; daysAgo: number; value?: number }>) {
  const now = Date.now();
  for (const r of rows) {
    await svc.sql(
      `INSERT INTO interactions (tenant_id, id, customer_id, offer_id, outcome, created_at, occurred_at, conversion_value)
       VALUES ($1, $2, $3, $4, $5, $6, $6, $7)`,
      [tenantId, randomUUID(), customerId, randomUUID(), r.outcome, new Date(now - r.daysAgo * DAY), r.value ?? null],
    );
  }
}

async function waitFor(ok: () => boolean, ms = 5_000) {
  const until = Date.now() + ms;
  while (!ok() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), "condition within time");
}

before(async () => {
  const sink = new Writable({ write: (chunk, _enc, done) => (logLines.push(String(chunk)), done()) });
  svc = await startTestService({ logLevel: "info" }, undefined, createLogger("info", sink as never));
});
after(() => svc.stop());

describe("CLV records", () => {
  test("computed from the tenant's interactions as docs/clv.md says, then cached, then recomputed", async () => {
    const t = await svc.createTenant();
    // 20 impressions between 150 and 90 days ago, one purchase worth 500 at 90 days.
    await seedInteractions(t.tenantId, "bob", [
      ...Array.from({ length: 20 }, (_, i) => ({ outcome: "impression", daysAgo: 150 - i * 3 })),
      { outcome: "purchase", daysAgo: 90, value: 500 },
    ]);
    const first = await call("GET", "/api/v1/customers/bob/clv", t.apiKey);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const { computedAt, ...fields } = first.body;
    // p = 90/180; T = 60 days = 2 months; revenue = 500/2·24·0.5; score = 100·(0.2·0.5 + 0.3·20/40 + 0.5·500/1000)
    assert.deepEqual(fields, {
      customerId: "bob", clvScore: 50, predictedRevenue: 3000, churnProbability: 0.5,
      rfmRecency: 90, rfmFrequency: 20, rfmMonetary: 500, segment: "medium", source: "computed",
    });
    const again = await call("GET", "/api/v1/customers/bob/clv", t.apiKey);
    assert.equal(again.body.source, "cached");
    assert.equal(again.body.computedAt, computedAt);
    await seedInteractions(t.tenantId, "bob", [{ outcome: "purchase", daysAgo: 0, value: 500 }]);
    const viewer = await svc.createUser(t.tenantId, "viewer");
    const re = await call("POST", "/api/v1/customers/bob/clv", viewer.apiKey, {});
    assert.equal(re.status, 200, JSON.stringify(re.body));
    assert.equal(re.body.source, "recomputed");
    assert.equal(re.body.rfmRecency, 0);
    assert.equal(re.body.rfmMonetary, 1000);
    assert.equal((await call("GET", "/api/v1/customers/bob/clv", t.apiKey)).body.clvScore, re.body.clvScore);

    const viaGrpc = await grpcClient(CustomerValueService, svc.grpcAddress).getCustomerClv({ customerId: "bob" }, { headers: { "x-api-key": t.apiKey } });
    assert.equal(viaGrpc.source, "cached");
    assert.equal(viaGrpc.clvScore, re.body.clvScore);
  });

  test("a customer with no data is 404; another tenant's customer is 404; a stored customer without interactions has a record", async () => {
    const mine = await svc.createTenant();
    const theirs = await svc.createTenant();
    await seedInteractions(mine.tenantId, "carla", [{ outcome: "impression", daysAgo: 1 }]);
    assert.equal((await call("GET", "/api/v1/customers/carla/clv", mine.apiKey)).status, 200);
    for (const [method, path] of [["GET", "/api/v1/customers/carla/clv"], ["POST", "/api/v1/customers/carla/clv"], ["GET", "/api/v1/customers/nobody/clv"]]) {
      const res = await call(method, path, path.includes("nobody") ? mine.apiKey : theirs.apiKey, method === "POST" ? {} : undefined);
      assert.equal(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
    }
    const e = await rpcError(connectClient(CustomerValueService, svc.baseUrl).recomputeCustomerClv({ customerId: "carla" }, { headers: { "x-api-key": theirs.apiKey } }));
    assert.equal(e.code, 5);
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM clv_records WHERE tenant_id = $1", [theirs.tenantId]))[0].n, 0, "nothing written for the other tenant");

    assert.equal((await call("PUT", "/api/v1/customers/dora", mine.apiKey, { attributes: { age: 30 } })).status, 200);
    const dora = await call("GET", "/api/v1/customers/dora/clv", mine.apiKey);
    assert.equal(dora.status, 200);
    assert.deepEqual([dora.body.rfmRecency, dora.body.rfmFrequency, dora.body.clvScore, dora.body.segment], [0, 0, 20, "low"]);
  });

  test("POST /clv/compute walks thousands of customers in keyset pages of 50-customer batches, with progress in the log", async () => {
    const t = await svc.createTenant();
    const count = 3_000;
    // Half active big spenders (seen a day ago), half quiet for 200 days with impressions only (at risk).
    await svc.sql(
      `INSERT INTO interactions (tenant_id, id, customer_id, offer_id, outcome, created_at, conversion_value)
       SELECT $1, gen_random_uuid(), 'bulk-' || lpad(g::text, 5, '0'), gen_random_uuid(),
         CASE WHEN g % 2 = 0 THEN 'purchase' ELSE 'impression' END,
         now() - CASE WHEN g % 2 = 0 THEN interval '1 day' ELSE interval '200 days' END,
         CASE WHEN g % 2 = 0 THEN 5000 END
       FROM generate_series(1, $2) AS g`,
      [t.tenantId, count],
    );
    const started = Date.now();
    const res = await call("POST", "/api/v1/clv/compute", t.apiKey, {});
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { success: true, computed: count, errors: 0, segment: "all" });
    assert.ok(Date.now() - started < 30_000, "seconds, not minutes");
    const bySegment = await svc.sql("SELECT segment, count(*)::int AS n FROM clv_records WHERE tenant_id = $1 GROUP BY segment ORDER BY segment", [t.tenantId]);
    // Spenders: p = 1/91, score = 100·(0.2·90/91 + 0.5·5000/5500) = 65 → high. Quiet: p = 200/290 ≥ 0.6 with impressions → at_risk.
    assert.deepEqual(bySegment, [{ segment: "at_risk", n: count / 2 }, { segment: "high", n: count / 2 }]);
    const progress = logLines.filter((l) => l.includes("clv compute progress") && l.includes(t.tenantId));
    assert.ok(progress.length >= 1, "progress is logged");
    assert.ok(logLines.some((l) => l.includes("clv compute finished") && l.includes(t.tenantId) && l.includes(`"computed":${count}`)));

    // A segment run: that segment's customers plus those without a record.
    await seedInteractions(t.tenantId, "newcomer", [{ outcome: "impression", daysAgo: 0 }]);
    const before = await svc.sql("SELECT customer_id, computed_at FROM clv_records WHERE tenant_id = $1 AND segment = 'high' LIMIT 1", [t.tenantId]);
    const atRisk = await call("POST", "/api/v1/clv/compute", t.apiKey, { segment: "at_risk" });
    assert.deepEqual(atRisk.body, { success: true, computed: count / 2 + 1, errors: 0, segment: "at_risk" });
    const after = await svc.sql("SELECT computed_at FROM clv_records WHERE tenant_id = $1 AND customer_id = $2", [t.tenantId, before[0].customer_id]);
    assert.equal(after[0].computed_at.getTime(), before[0].computed_at.getTime(), "other segments are left alone");
    assert.equal(CLV_BATCH, 50);
  });

  test("POST /clv/compute also computes customers known only by events, and invalidates the cache once per page", async () => {
    const t = await svc.createTenant();
    // 450 customers: ids interleave so that pages mix the sources. Every third has interactions,
    // every third only events, every third both; the events-only ones must be computed too.
    const ids = Array.from({ length: 450 }, (_, i) => `mix-${String(i).padStart(4, "0")}`);
    const withInteractions = ids.filter((_, i) => i % 3 !== 1);
    const withEvents = ids.filter((_, i) => i % 3 !== 0);
    await svc.sql(
      `INSERT INTO interactions (tenant_id, id, customer_id, offer_id, outcome, created_at)
       SELECT $1, gen_random_uuid(), c, gen_random_uuid(), 'impression', now() - interval '3 days' FROM unnest($2::text[]) AS c`,
      [t.tenantId, withInteractions],
    );
    await svc.sql(
      `INSERT INTO customer_events (tenant_id, id, event_type, customer_id, properties, occurred_at)
       SELECT $1, gen_random_uuid(), 'page_view', c, '{}'::jsonb, now() - interval '1 day' FROM unnest($2::text[]) AS c`,
      [t.tenantId, withEvents],
    );
    // A process gets its own message twice (delivered locally first, then through Redis): count distinct ones.
    const messages = { single: 0, many: new Map<string, string[]>() };
    const bus = svc.running.foundation.bus;
    await bus.subscribe("decisioning.customer.invalidate", (key) => key.startsWith(`${t.tenantId}|`) && messages.single++);
    await bus.subscribe("decisioning.customer.invalidate.many", (keys) => {
      const mine = (JSON.parse(keys) as string[]).filter((k) => k.startsWith(`${t.tenantId}|`));
      if (mine.length) messages.many.set(keys, mine);
    });
    const res = await call("POST", "/api/v1/clv/compute", t.apiKey, {});
    assert.deepEqual(res.body, { success: true, computed: ids.length, errors: 0, segment: "all" });
    const onlyEvents = await svc.sql(
      "SELECT customer_id, rfm_frequency, rfm_recency FROM clv_records WHERE tenant_id = $1 AND customer_id = ANY($2::text[]) ORDER BY customer_id",
      [t.tenantId, ids.filter((_, i) => i % 3 === 1)],
    );
    assert.equal(onlyEvents.length, 150, "every events-only customer has a record");
    assert.ok(onlyEvents.every((r) => r.rfm_frequency === 0 && r.rfm_recency === 1), "F = 0, recency from the last event");
    // Pages of 200: 200 + 200 + 50 ids, one message each, together naming every customer once.
    await waitFor(() => messages.many.size >= 3);
    assert.equal(messages.single, 0, "no per-customer messages");
    assert.deepEqual([...messages.many.values()].map((m) => m.length), [200, 200, 50]);
    assert.deepEqual([...messages.many.values()].flat().sort(), ids.map((id) => `${t.tenantId}|${id}`));
  });

  test("an unknown segment is 400 naming segment, nothing computed", async () => {
    const t = await svc.createTenant();
    await seedInteractions(t.tenantId, "x", [{ outcome: "impression", daysAgo: 0 }]);
    for (const segment of ["vip", "", "HIGH"]) {
      const res = await call("POST", "/api/v1/clv/compute", t.apiKey, { segment });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(JSON.stringify(res.body), /segment: must be one of high, medium, low, at_risk/);
    }
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM clv_records WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);
  });
});

describe("the CLV tilt in Recommend (spec 4.14)", () => {
  test("a formula model's clvWeight multiplies the score by impact^(clvWeight·clvScore/100); without a record nothing changes", async () => {
    const t = await svc.createTenant();
    // A: priority 50, no revenue (impact 1). B: priority 40, margin 1, revenue 100 → impact 1 + 100/200 = 1.5.
    const a = await create("offers", { name: unique("a"), status: "active", priority: 50 }, t);
    const b = await create("offers", { name: unique("b"), status: "active", priority: 40, margin: 1, revenueValue: 100 }, t);
    const model = await create("algorithm-models", {
      name: unique("tilted"), key: unique("tilted"), type: "formula",
      config: { weights: { priority: 1, businessValue: 0, propensity: 0, impact: 0, relevance: 0 }, clvWeight: 2 },
    }, t);
    await create("decision-flows", {
      name: unique("flow"), key: "tilt", status: "active",
      config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: model.key }, { type: "rank", count: 2 }] },
    }, t);
    const recommend = async (customerId: string) => {
      const res = await call("POST", "/api/v1/recommend", t.apiKey, { customerId, flow: "tilt" });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.offers.map((o: any) => [o.offerId, o.score]);
    };
    await seedInteractions(t.tenantId, "valuable", [
      ...Array.from({ length: 60 }, () => ({ outcome: "impression", daysAgo: 2 })),
      { outcome: "purchase", daysAgo: 2, value: 1500 },
    ]);
    // Before any record: plain priority order, untilted scores, and the customer is now in the cache.
    assert.deepEqual(await recommend("valuable"), [[a.id, 0.5], [b.id, 0.4]]);
    const clv = await call("POST", "/api/v1/customers/valuable/clv", t.apiKey, {});
    assert.equal(clv.status, 200);
    const score = clv.body.clvScore;
    assert.ok(score > 60, `a valuable customer: ${score}`);
    const tiltedB = 0.4 * Math.pow(1.5, (2 * score) / 100);
    const tilted = await recommend("valuable");
    assert.deepEqual(tilted.map(([id]: [string]) => id), [b.id, a.id], "the tilt reorders the ranking");
    assert.ok(Math.abs(tilted[0][1] - tiltedB) < 1e-9, `${tilted[0][1]} vs ${tiltedB}`);
    assert.equal(tilted[1][1], 0.5, "impact 1: untouched");
    assert.deepEqual(await recommend("stranger"), [[a.id, 0.5], [b.id, 0.4]], "no record: the term is skipped");
  });

  test("a ranking profile's clv weight tilts rankScore the same way", async () => {
    const t = await svc.createTenant();
    const a = await create("offers", { name: unique("a"), status: "active", priority: 50 }, t);
    const b = await create("offers", { name: unique("b"), status: "active", priority: 40, margin: 1, revenueValue: 100 }, t);
    const model = await create("algorithm-models", {
      name: unique("plain"), key: unique("plain"), type: "formula",
      config: { weights: { priority: 1, businessValue: 0, propensity: 0, impact: 0, relevance: 0 } },
    }, t);
    const profile = await create("ranking-profiles", { name: unique("by-clv"), config: { weights: { score: 1, clv: 2 } } }, t);
    await create("decision-flows", {
      name: unique("flow"), key: "profiled", status: "active",
      config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: model.key }, { type: "rank", count: 2, profileId: profile.id }] },
    }, t);
    await seedInteractions(t.tenantId, "vip", [
      ...Array.from({ length: 60 }, () => ({ outcome: "impression", daysAgo: 2 })),
      { outcome: "purchase", daysAgo: 2, value: 1500 },
    ]);
    const clv = await call("POST", "/api/v1/customers/vip/clv", t.apiKey, {});
    const order = async (customerId: string) =>
      (await call("POST", "/api/v1/recommend", t.apiKey, { customerId, flow: "profiled" })).body.offers.map((o: any) => o.offerId);
    assert.ok(0.4 * Math.pow(1.5, (2 * clv.body.clvScore) / 100) > 0.5);
    assert.deepEqual(await order("vip"), [b.id, a.id]);
    assert.deepEqual(await order("nobody-yet"), [a.id, b.id]);
  });
});

describe("the unified profile (spec 2.11, 4.15)", () => {
  /** A customer with attributes and consent, two identity links, interactions, a CLV record. */
  async function richCustomer(t: Tenant, customerId: string) {
    assert.equal((await call("PUT", `/api/v1/customers/${customerId}`, t.apiKey, {
      attributes: { age: 41, country: "NL", consent: { email: true, sms: false } },
    })).status, 200);
    await seedInteractions(t.tenantId, customerId, [
      ...Array.from({ length: 25 }, (_, i) => ({ outcome: "impression", daysAgo: 30 - i })),
      { outcome: "purchase", daysAgo: 1, value: 80 },
    ]);
    const email = await create(`customers/${customerId}/identities`, { type: "email", value: `${customerId}@example.com`, confidence: 0.9 }, t);
    const device = await create(`customers/${customerId}/identities`, { type: "device_id", value: "dev-1" }, t);
    const clv = await call("POST", `/api/v1/customers/${customerId}/clv`, t.apiKey, {});
    assert.equal(clv.status, 200);
    return { email, device, clv: clv.body };
  }

  test("legacy form: every section in spec order, the last 20 interactions, CLV segment membership, consent", async () => {
    const t = await svc.createTenant();
    const { email, device, clv } = await richCustomer(t, "pat");
    const viewer = await svc.createUser(t.tenantId, "viewer");
    const res = await call("GET", "/api/v1/customers/pat/unified-profile", viewer.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const body = res.body;
    assert.equal(body.customerId, "pat");
    assert.equal(body.tenantId, t.tenantId);
    assert.ok(Date.parse(body.computedAt) > 0);
    assert.deepEqual(body.sections.map((s: any) => s.name), ["identities", "interactions", "segments", "journeys", "experiments", "consent"]);
    const section = (name: string) => body.sections.find((s: any) => s.name === name).data;
    assert.deepEqual(section("identities"), [
      { id: email.id, type: "email", value: "pat@example.com", confidence: 0.9 },
      { id: device.id, type: "device_id", value: "dev-1", confidence: 1 },
    ]);
    const interactions = section("interactions");
    assert.equal(interactions.length, 20, "the last 20 of 26");
    assert.equal(interactions[0].interactionType, "purchase", "newest first");
    assert.deepEqual(Object.keys(interactions[0]).sort(), ["channelId", "id", "interactionType", "offerId", "source", "timestamp"]);
    const times = interactions.map((i: any) => Date.parse(i.timestamp));
    assert.deepEqual(times, [...times].sort((x, y) => y - x));
    // Compared as instants: protobuf JSON drops a zero fraction (…01Z) where toISOString keeps it (…01.000Z).
    const segments = section("segments");
    assert.deepEqual(segments.map((m: any) => [m.segmentId, m.segmentName]), [[`clv:${clv.segment}`, `CLV ${clv.segment}`]]);
    assert.equal(Date.parse(segments[0].memberSince), Date.parse(clv.computedAt));
    assert.deepEqual(section("journeys"), []);
    assert.deepEqual(section("experiments"), []);
    assert.deepEqual(section("consent"), [{ channel: "email", granted: true }, { channel: "sms", granted: false }]);
    assert.equal(Object.hasOwn(body, "demographics"), false, "the structured sections are not in the legacy form");
  });

  test("segments: the catalog's active segments the attributes match, beside the CLV segment, memberSince the later of the two writes", async () => {
    const t = await svc.createTenant();
    const segment = async (name: string, condition: unknown, status = "active") => create("segments", { name, status, config: { condition } }, t);
    const dutch = await segment("Dutch", { attribute: "country", op: "eq", value: "NL" });
    const adults = await segment("Over 40", { all: [{ attribute: "age", op: "gte", value: 40 }, { attribute: "customer.country", op: "in", value: ["NL", "BE"] }] });
    await segment("French", { attribute: "country", op: "eq", value: "FR" });
    await segment("Switched off", { attribute: "country", op: "eq", value: "NL" }, "inactive");
    await segment("Needs income", { attribute: "income", op: "gt", value: 0 });
    const other = await svc.createTenant();
    await create("segments", { name: "Everyone NL", config: { condition: { attribute: "country", op: "eq", value: "NL" } } }, other);

    await new Promise((r) => setTimeout(r, 20));
    assert.equal((await call("PUT", "/api/v1/customers/sam", t.apiKey, { attributes: { age: 41, country: "NL" } })).status, 200);
    assert.equal((await call("POST", "/api/v1/customers/sam/clv", t.apiKey, {})).status, 200);
    const read = async () => (await call("GET", "/api/v1/customers/sam/unified-profile?sections=segments", t.apiKey)).body.sections[0].data;
    const [stored] = await svc.sql("SELECT updated_at FROM customers WHERE tenant_id = $1 AND customer_id = 'sam'", [t.tenantId]);
    let rows = await read();
    assert.deepEqual(rows.map((r: any) => r.segmentId), ["clv:low", dutch.id, adults.id], "CLV first, then matching segments in creation order");
    assert.deepEqual(rows.slice(1).map((r: any) => r.segmentName), ["Dutch", "Over 40"]);
    assert.equal(Date.parse(rows[1].memberSince), stored.updated_at.getTime(), "attributes written after the segment: since the attributes");

    // Editing a segment restarts its membership; a segment the customer leaves is gone.
    await new Promise((r) => setTimeout(r, 20));
    const edited = await call("PUT", "/api/v1/segments", t.apiKey, { id: adults.id, config: { condition: { attribute: "age", op: "gte", value: 41 } } });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    rows = await read();
    assert.equal(Date.parse(rows[2].memberSince), Date.parse(edited.body.updatedAt), "segment changed after the attributes: since the segment");
    assert.ok(Date.parse(rows[2].memberSince) > stored.updated_at.getTime());
    assert.equal((await call("PUT", "/api/v1/customers/sam", t.apiKey, { attributes: { age: 30, country: "NL" } })).status, 200);
    rows = await read();
    assert.deepEqual(rows.map((r: any) => r.segmentName), ["CLV low", "Dutch"]);
    // A customer known without stored attributes is in no catalog segment.
    await seedInteractions(t.tenantId, "ghost", [{ outcome: "impression", daysAgo: 1 }]);
    assert.deepEqual((await call("GET", "/api/v1/customers/ghost/unified-profile?sections=segments", t.apiKey)).body.sections[0].data, []);
  });

  test("sections=a,b filters; an unknown section is 400 naming sections", async () => {
    const t = await svc.createTenant();
    await richCustomer(t, "quinn");
    const res = await call("GET", "/api/v1/customers/quinn/unified-profile?sections=consent,identities", t.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body.sections.map((s: any) => s.name), ["identities", "consent"]);
    for (const query of ["sections=identities,wishlist", "sections=IDENTITIES", "format=pdf", "format=structured&sections=consent"]) {
      const bad = await call("GET", `/api/v1/customers/quinn/unified-profile?${query}`, t.apiKey);
      assert.equal(bad.status, 400, `${query}: ${JSON.stringify(bad.body)}`);
      assert.match(JSON.stringify(bad.body), query.startsWith("format=pdf") ? /format: / : /sections: /, query);
    }
  });

  test("format=structured: demographics, interactions, clv, metrics, suppressions", async () => {
    const t = await svc.createTenant();
    const { clv } = await richCustomer(t, "robin");
    const res = await call("GET", "/api/v1/customers/robin/unified-profile?format=structured", t.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const body = res.body;
    assert.equal(Object.hasOwn(body, "sections"), false);
    assert.deepEqual(body.demographics, { age: 41, country: "NL" });
    assert.equal(body.interactions.length, 20);
    const { source: _source, ...record } = clv;
    assert.deepEqual(body.clv, record, "the CLV record without its read source");
    assert.equal(body.metrics.impressions, 25);
    assert.equal(body.metrics.totalConversionValue, 80);
    assert.equal(body.metrics.identities, 2);
    assert.ok(Date.parse(body.metrics.firstSeenAt) < Date.parse(body.metrics.lastSeenAt));
    assert.deepEqual(body.suppressions, [{ channel: "sms", reason: "consent_refused" }]);

    // A stored customer with nothing else: empty lists and a null clv, not missing fields.
    assert.equal((await call("PUT", "/api/v1/customers/sam", t.apiKey, { attributes: { age: 20 } })).status, 200);
    const bare = await call("GET", "/api/v1/customers/sam/unified-profile?format=structured", t.apiKey);
    assert.equal(bare.status, 200, JSON.stringify(bare.body));
    assert.deepEqual([bare.body.interactions, bare.body.clv, bare.body.suppressions, bare.body.metrics.impressions], [[], null, [], 0]);
  });

  test("another tenant's customer and a customer with no data are 404; identities are the tenant's own", async () => {
    const mine = await svc.createTenant();
    const theirs = await svc.createTenant();
    const { email } = await richCustomer(mine, "terry");
    for (const path of ["/api/v1/customers/terry/unified-profile", "/api/v1/customers/terry/unified-profile?format=structured"]) {
      assert.equal((await call("GET", path, theirs.apiKey)).status, 404, path);
    }
    assert.equal((await call("GET", "/api/v1/customers/ghost/unified-profile", mine.apiKey)).status, 404);
    assert.deepEqual((await call("GET", "/api/v1/customers/terry/identities", theirs.apiKey)).body.data, []);
    assert.equal((await call("DELETE", `/api/v1/customers/terry/identities/${email.id}`, theirs.apiKey)).status, 404);
    assert.equal((await call("DELETE", "/api/v1/customers/terry/identities/not-a-uuid", mine.apiKey)).status, 404);
    assert.equal((await call("GET", "/api/v1/customers/terry/identities", mine.apiKey)).body.data.length, 2, "still there");
  });

  test("identity links: bad fields are 400 naming them, a duplicate is 409, viewers read but cannot write, delete works", async () => {
    const t = await svc.createTenant();
    const viewer = await svc.createUser(t.tenantId, "viewer");
    const bad: Array<[unknown, RegExp]> = [
      [{ value: "x" }, /type: is required/],
      [{ type: "Email Address", value: "x" }, /type: /],
      [{ type: "email" }, /value: must be 1 to 500 characters/],
      [{ type: "email", value: "x", confidence: 1.5 }, /confidence: must be between 0 and 1/],
    ];
    for (const [body, message] of bad) {
      const res = await call("POST", "/api/v1/customers/uma/identities", t.apiKey, body);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(JSON.stringify(res.body), message);
    }
    const link = await create("customers/uma/identities", { type: "email", value: "uma@example.com" }, t);
    assert.equal((await call("POST", "/api/v1/customers/uma/identities", t.apiKey, { type: "email", value: "uma@example.com" })).status, 409);
    assert.equal((await call("POST", "/api/v1/customers/uma/identities", viewer.apiKey, { type: "crm_id", value: "1" })).status, 403);
    assert.equal((await call("GET", "/api/v1/customers/uma/identities", viewer.apiKey)).body.data.length, 1);
    // An identity link alone is data: the profile exists.
    assert.equal((await call("GET", "/api/v1/customers/uma/unified-profile?sections=identities", viewer.apiKey)).status, 200);
    const del = await call("DELETE", `/api/v1/customers/uma/identities/${link.id}`, t.apiKey);
    assert.deepEqual([del.status, del.body], [204, null], "spec 7: 204 without a body");
    assert.equal((await call("GET", "/api/v1/customers/uma/unified-profile", t.apiKey)).status, 404, "nothing left");
  });
});

describe("the profile's optional activity ports (src/customers/customer-activity.ts)", () => {
  test("events and delivery reports join the interactions, newest first, and alone make a customer known", async () => {
    const t = await svc.createTenant();
    const now = Date.now();
    // Small implementations of the ports over fixed rows: the real ones belong to the events and webhook domains.
    const events: CustomerEventHistory = {
      recent: async (tenantId, customerId, limit) =>
        tenantId === t.tenantId && customerId === "vic"
          ? [{ id: "evt-1", eventType: "cart_abandoned", properties: {}, occurredAt: new Date(now - 1_000) }].slice(0, limit)
          : [],
      activitySpans: async () => new Map(),
      customerIdsAfter: async () => [],
    };
    const deliveries: DeliveryEventHistory = {
      recent: async (tenantId, customerId, limit) =>
        tenantId === t.tenantId && customerId === "vic"
          ? [{ providerMessageId: "msg-9", status: "opened" as const, provider: "sendgrid", occurredAt: new Date(now - 2 * DAY) }].slice(0, limit)
          : [],
    };
    const customers = createCustomers({
      db: svc.running.foundation.db,
      logger: svc.running.foundation.logger,
      decisions: svc.running.services.decisions.readModel.customerHistory,
      clvChanged: async () => {},
      events,
      deliveries,
    });
    const profiles = customers.services.find((s) => s.service.typeName === "decisioning.v1.CustomerProfileService")!;
    const ctx: TenantContext = {
      tenantId: t.tenantId, userId: t.userId, actorName: "test", role: "viewer", principal: { kind: "internal" }, requestId: randomUUID(),
    };
    await seedInteractions(t.tenantId, "vic", [{ outcome: "impression", daysAgo: 1 }]);
    const profile = (await profiles.impl.getUnifiedProfile(ctx, { customerId: "vic", format: "", sections: "interactions" }, undefined as never)) as UnifiedProfile;
    const rows = toJson(ListValueSchema, profile.sections[0].data!) as any[];
    assert.deepEqual(rows.map((r) => [r.source, r.interactionType, r.id === "evt-1" || r.id === "msg-9" ? r.id : "row"]), [
      ["event", "cart_abandoned", "evt-1"],
      ["decision", "impression", "row"],
      ["delivery", "delivery_opened", "msg-9"],
    ]);
    const other = { ...ctx, tenantId: (await svc.createTenant()).tenantId };
    const e = await profiles.impl.getUnifiedProfile(other, { customerId: "vic", format: "", sections: "" }, undefined as never).catch((err) => err);
    assert.equal(e.code, "NOT_FOUND");
  });
});

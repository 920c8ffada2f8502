import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, rest, rpcError } from "../support/clients.js";
import { startChildService } from "../support/child-service.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { EventService } from "../../gen/decisioning/v1/events_pb.js";
import { eventStreamKey } from "../../src/platform/redis.js";
import { EventStore } from "../../src/events/event-store.js";
import { eventRetentionJob } from "../../src/events/event-jobs.js";

/** Small enough to see trimming with a few hundred events (Redis trims whole stream nodes of ~100 entries). */
const STREAM_MAX = 50;
const QUOTA = 3;

let svc: TestService;
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;

/** X-Requested-With satisfies the CSRF guard on body-less writes such as DELETE. */
const call = (method: string, path: string, key: string, body?: unknown, baseUrl = svc.baseUrl) =>
  rest(baseUrl, method, path, { key, body, headers: { "x-requested-with": "test" } });

async function created(path: string, body: Record<string, unknown>, t: Tenant) {
  const res = await call("POST", `/api/v1/${path}`, t.apiKey, body);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}


const send = (t: Tenant, body: unknown, baseUrl = svc.baseUrl) => call("POST", "/api/v1/events", t.apiKey, body, baseUrl);

async function journey(t: Tenant, steps: unknown[] = [{ type: "decision" }]) {
  return created("journeys", { name: unique("journey"), steps }, t);
}

async function enrollments(t: Tenant, journeyId: string) {
  const res = await call("GET", `/api/v1/journeys/${journeyId}/enrollments`, t.apiKey);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data as any[];
}

before(async () => {
  receiver = await startHttpReceiver();
  svc = await startTestService({
    eventStreamMaxLen: STREAM_MAX,
    decisionQuota: QUOTA,
    settingsKeys: [{ id: "k1", secret: "events-test-settings-key-0123456789abcdef" }],
    outbound: { allowPrivate: true, maxAttempts: 2, backoffMs: 20, backoffMaxMs: 50, timeoutMs: 3000 },
  });
});
after(async () => {
  await svc?.stop();
  await receiver?.close();
});

describe("POST /events: validation", () => {
  test("101 events is a 400 and nothing is stored", async () => {
    const t = await svc.createTenant();
    const res = await send(t, Array.from({ length: 101 }, () => ({ eventType: "view", customerId: "c" })));
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(res.body.detail, /^events: holds 101 items; at most 100/);
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM customer_events WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);
    // Refused for its size before it is counted: the window of 500 events is untouched.
    const one = await send(t, { eventType: "view", customerId: "c" });
    assert.equal(one.status, 202);
    assert.equal(one.headers.get("x-ratelimit-remaining"), "499");
  });

  test("every bad item is named by its index, and a batch with one bad item stores none", async () => {
    const t = await svc.createTenant();
    const res = await send(t, [
      { eventType: "view", customerId: "c", timestamp: "yesterday" },
      { customerId: "c" },
      { eventType: "view", properties: "not an object" },
      { eventType: "view", properties: [1, 2] },
      { eventType: "fine", timestamp: "2026-01-02T03:04:05Z", properties: { a: 1 } },
      { eventType: "view", timestamp: "2026-02-30T03:04:05Z" },
    ]);
    assert.equal(res.status, 400, JSON.stringify(res.body));
    for (const named of ["events[0].timestamp", "events[1].eventType", "events[2].properties", "events[3].properties", "events[5].timestamp"]) {
      assert.ok(res.body.detail.includes(named), `${named} in ${res.body.detail}`);
    }
    assert.ok(!res.body.detail.includes("events[4]"));
    assert.equal((await svc.sql("SELECT count(*)::int AS n FROM customer_events WHERE tenant_id = $1", [t.tenantId]))[0].n, 0);
  });

  test("a batch of 100 events between 1 MiB and 2 MB is accepted (spec 7: 413 only over 2 MB); over 2 MB is 413", async () => {
    const t = await svc.createTenant();
    // Strings are at most 10,000 characters (request screening): each event pads with three.
    const batch = (pad: number) =>
      Array.from({ length: 100 }, (_, i) => ({ eventType: "view", customerId: `big-${i}`, properties: { a: "x".repeat(pad), b: "y".repeat(pad), c: "z".repeat(pad) } }));
    const mid = batch(5_000);
    const size = Buffer.byteLength(JSON.stringify(mid));
    assert.ok(size > 1024 * 1024 && size < 2_000_000, String(size));
    const res = await send(t, mid);
    assert.equal(res.status, 202, JSON.stringify(res.body).slice(0, 300));
    assert.equal(res.body.accepted, 100);
    const over = await send(t, batch(7_000));
    assert.equal(over.status, 413);
    assert.match(over.body.detail, /exceeds the limit of 2000000 bytes/);
  });

  test("a viewer may not send events", async () => {
    const t = await svc.createTenant();
    const viewer = await svc.createUser(t.tenantId, "viewer");
    assert.equal((await send({ ...t, apiKey: viewer.apiKey }, { eventType: "view" })).status, 403);
  });
});

describe("POST /events: acceptance and the stream", () => {
  test("one object or an array over REST, {events} over Connect; each lands in the store and the stream", async () => {
    const t = await svc.createTenant();
    const one = await send(t, { eventType: "page_view", customerId: "c1", properties: { page: "/home" }, timestamp: "2026-03-01T10:00" });
    assert.equal(one.status, 202, JSON.stringify(one.body));
    assert.equal(one.body.accepted, 1);
    const [result] = one.body.results;
    assert.equal(result.eventType, "page_view");
    assert.equal(result.triggersEvaluated, true);
    assert.match(result.streamId, /^\d+-\d+$/);

    const many = await send(t, [{ eventType: "a", customerId: "c1" }, { eventType: "b" }]);
    assert.equal(many.status, 202);
    assert.deepEqual(many.body.results.map((r: any) => r.eventType), ["a", "b"]);

    const client = connectClient(EventService, svc.baseUrl);
    const viaConnect = await client.ingestEvents({ events: [{ eventType: "c", customerId: "c1" }] }, { headers: { "x-api-key": t.apiKey } });
    assert.equal(viaConnect.accepted, 1);
    const empty = await rpcError(client.ingestEvents({ events: [] }, { headers: { "x-api-key": t.apiKey } }));
    assert.equal(empty.code, 3);

    const redis = svc.running.foundation.redis!;
    // Spec 6's name, under the deployment's REDIS_KEY_PREFIX (which the client adds).
    assert.equal(eventStreamKey(t.tenantId), `events:${t.tenantId}`);
    const entries = await redis.xrange(`events:${t.tenantId}`, "-", "+");
    assert.equal(entries.length, 4);
    const fields = Object.fromEntries(chunk(entries[0][1]));
    assert.equal(fields.eventType, "page_view");
    assert.equal(fields.customerId, "c1");
    assert.equal(fields.tenantId, t.tenantId);
    assert.equal(fields.timestamp, "2026-03-01T10:00:00.000Z");
    assert.deepEqual(JSON.parse(fields.properties), { page: "/home" });

    // CustomerEventHistory: newest first, by the event's own time.
    const history = await svc.running.services.events.history.recent(t.tenantId, "c1", 10);
    assert.equal(history.length, 3);
    assert.equal(history[history.length - 1].eventType, "page_view");
    assert.deepEqual(history[history.length - 1].properties, { page: "/home" });
  });

  test("the stream is capped near EVENT_STREAM_MAXLEN", async () => {
    const t = await svc.createTenant();
    for (let b = 0; b < 3; b++) {
      const res = await send(t, Array.from({ length: 100 }, (_, i) => ({ eventType: "tick", properties: { i } })));
      assert.equal(res.status, 202);
    }
    const length = await svc.running.foundation.redis!.xlen(eventStreamKey(t.tenantId));
    assert.ok(length >= STREAM_MAX && length < 300, `XLEN ${length}: trimmed towards ${STREAM_MAX}`);

    const reset = await call("POST", "/api/v1/workspace/reset", t.apiKey, { confirm: t.tenantId });
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.equal(await svc.running.foundation.redis!.exists(eventStreamKey(t.tenantId)), 0, "a workspace reset deletes the tenant's stream");
  });

  test("a stream failure gives streamId null, and the triggers still run", async () => {
    const t = await svc.createTenant();
    const j = await journey(t);
    await created("triggers", { name: unique("rule"), eventType: "signup", action: { type: "journey", journeyId: j.id } }, t);
    // A string where the stream should be: XADD fails with WRONGTYPE.
    await svc.running.foundation.redis!.set(eventStreamKey(t.tenantId), "not a stream");
    const res = await send(t, { eventType: "signup", customerId: "c-stream" });
    assert.equal(res.status, 202);
    assert.equal(res.body.results[0].streamId, null);
    assert.equal(res.body.results[0].triggersEvaluated, true);
    assert.equal(res.body.results[0].triggersMatched, 1);
    assert.equal((await enrollments(t, j.id)).length, 1);
  });
});

describe("trigger rules", () => {
  test("a rule matches on event type and its condition over properties, and enrols once with a decision", async () => {
    const t = await svc.createTenant();
    await created("offers", { name: unique("offer"), status: "active", priority: 50 }, t);
    const j = await journey(t, [{ type: "decision", count: 1 }]);
    await created("triggers", {
      name: unique("big-purchase"),
      eventType: "purchase",
      conditions: { all: [{ attribute: "properties.amount", op: "gte", value: 100 }, { attribute: "channel", op: "eq", value: "web" }] },
      action: { type: "journey", journeyId: j.id },
    }, t);
    const res = await send(t, [
      { eventType: "purchase", customerId: "small", properties: { amount: 50, channel: "web" } },
      { eventType: "purchase", customerId: "nochannel", properties: { amount: 500 } },
      { eventType: "refund", customerId: "other", properties: { amount: 500, channel: "web" } },
      { eventType: "purchase", customerId: "big", properties: { amount: 150, channel: "web" } },
      { eventType: "purchase", customerId: "big", properties: { amount: 900, channel: "web" } },
    ]);
    assert.equal(res.status, 202, JSON.stringify(res.body));
    assert.deepEqual(res.body.results.map((r: any) => r.triggersMatched), [0, 0, 0, 1, 1]);
    const rows = await enrollments(t, j.id);
    assert.equal(rows.length, 1, "one active enrollment per customer and journey");
    assert.equal(rows[0].customerId, "big");
    assert.equal(rows[0].status, "active");
    assert.equal(rows[0].steps[0].status, "ok", JSON.stringify(rows[0].steps));
    assert.match(rows[0].steps[0].recommendationId, /^[0-9a-f-]{36}$/);
    assert.equal(rows[0].steps[0].offerIds.length, 1);

    const profile = await call("GET", "/api/v1/customers/big/unified-profile?sections=journeys,interactions", t.apiKey);
    assert.equal(profile.status, 200, JSON.stringify(profile.body));
    const section = (name: string) => profile.body.sections.find((s: any) => s.name === name).data;
    const journeys = section("journeys");
    assert.deepEqual(journeys.map((e: any) => [e.journeyId, e.status]), [[j.id, "active"]], "the profile shows the enrollment");
    assert.equal(Date.parse(journeys[0].enrolledAt), Date.parse(rows[0].enrolledAt));
    const events = section("interactions").filter((i: any) => i.source === "event");
    assert.deepEqual(events.map((i: any) => i.interactionType), ["purchase", "purchase"], "and the customer's events");
  });

  test("events count as activity for CLV: a customer known only by events gets a record, recent", async () => {
    const t = await svc.createTenant();
    const day = 86_400_000;
    const sent = await send(t, [
      { eventType: "page_view", customerId: "lurker", timestamp: new Date(Date.now() - 40 * day).toISOString() },
      { eventType: "page_view", customerId: "lurker", timestamp: new Date(Date.now() - 2 * day).toISOString() },
    ]);
    assert.equal(sent.status, 202, JSON.stringify(sent.body));
    const clv = await call("GET", "/api/v1/customers/lurker/clv", t.apiKey);
    assert.equal(clv.status, 200, JSON.stringify(clv.body));
    assert.equal(clv.body.source, "computed");
    assert.equal(clv.body.rfmRecency, 2, "days since the last event");
    assert.equal(clv.body.rfmFrequency, 0, "events are not impressions");
    assert.equal((await call("GET", "/api/v1/customers/nobody/clv", t.apiKey)).status, 404);
  });

  test("journey decisions count against the decision quota; a spent quota fails the step, not the event", async () => {
    const t = await svc.createTenant();
    await created("offers", { name: unique("offer"), status: "active" }, t);
    const j = await journey(t);
    await created("triggers", { name: unique("rule"), eventType: "visit", action: { type: "journey", journeyId: j.id } }, t);
    const res = await send(t, Array.from({ length: QUOTA + 1 }, (_, i) => ({ eventType: "visit", customerId: `q${i}` })));
    assert.equal(res.status, 202);
    const rows = await enrollments(t, j.id);
    assert.equal(rows.length, QUOTA + 1);
    const statuses = rows.map((r) => r.steps[0].status).sort();
    assert.deepEqual(statuses, [...Array(QUOTA).fill("ok"), "failed"].sort());
    assert.match(rows.find((r) => r.steps[0].status === "failed").steps[0].error, /quota|lifetime decisions/i);
    const usage = await call("GET", "/api/v1/workspace/usage", t.apiKey);
    assert.equal(usage.body.decisionsUsed, QUOTA);
  });

  test("enrollment is idempotent across two processes", async () => {
    const t = await svc.createTenant();
    await created("offers", { name: unique("offer"), status: "active" }, t);
    const j = await journey(t);
    await created("triggers", { name: unique("rule"), eventType: "cart", action: { type: "journey", journeyId: j.id } }, t);
    const child = await startChildService(svc);
    try {
      const batch = Array.from({ length: 10 }, () => ({ eventType: "cart", customerId: "same" }));
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => send(t, batch, i % 2 ? child.baseUrl : svc.baseUrl)),
      );
      for (const a of answers) assert.equal(a.status, 202, JSON.stringify(a.body));
      assert.ok(answers.every((a) => a.body.results.every((r: any) => r.triggersMatched === 1)));
      const rows = await enrollments(t, j.id);
      assert.equal(rows.length, 1);
      assert.equal(rows[0].steps.length, 1, "the steps ran once");
      const usage = await call("GET", "/api/v1/workspace/usage", t.apiKey);
      assert.equal(usage.body.decisionsUsed, 1, "one decision for one enrollment");
    } finally {
      await child.stop();
    }
  });

  test("an enrollment completes when the journey's duration has passed (0: once its steps ran); then the customer may enrol again", async () => {
    const t = await svc.createTenant();
    await created("offers", { name: unique("offer"), status: "active" }, t);
    const once = await journey(t);
    const instant = await created("journeys", { name: unique("instant"), steps: [{ type: "decision" }], durationHours: 0 }, t);
    assert.equal(instant.durationHours, 0);
    assert.equal(once.durationHours, null, "no duration: active until an exit event");
    const hourly = await created("journeys", { name: unique("hourly"), steps: [{ type: "decision" }], durationHours: 1 }, t);
    for (const [eventType, j] of [["visit", instant], ["signup", hourly]] as const) {
      await created("triggers", { name: unique("rule"), eventType, action: { type: "journey", journeyId: j.id } }, t);
    }
    assert.equal((await send(t, { eventType: "visit", customerId: "ann" })).status, 202);
    let rows = await enrollments(t, instant.id);
    assert.deepEqual(rows.map((r) => r.status), ["completed"]);
    assert.ok(Date.parse(rows[0].endedAt) >= Date.parse(rows[0].enrolledAt));
    assert.equal((await send(t, { eventType: "visit", customerId: "ann" })).status, 202);
    rows = await enrollments(t, instant.id);
    assert.deepEqual(rows.map((r) => r.status), ["completed", "completed"], "a completed customer enrols again");

    // One hour: a second trigger meanwhile enrols nobody; once due, the job completes it and re-entry works.
    await send(t, [{ eventType: "signup", customerId: "bo" }, { eventType: "signup", customerId: "bo" }]);
    rows = await enrollments(t, hourly.id);
    assert.deepEqual(rows.map((r) => [r.status, r.endedAt]), [["active", null]]);
    await svc.sql("UPDATE journey_enrollments SET completes_at = now() - interval '1 minute' WHERE tenant_id = $1 AND journey_id = $2", [t.tenantId, hourly.id]);
    const job = svc.running.services.jobs.find((j) => j.name === "journeys-complete")!;
    assert.deepEqual([job.schedule, job.route], [{ everyMs: 300_000 }, "tick"]);
    await job.run(new Date());
    rows = await enrollments(t, hourly.id);
    assert.deepEqual(rows.map((r) => r.status), ["completed"]);
    const [due] = await svc.sql("SELECT completes_at, ended_at FROM journey_enrollments WHERE tenant_id = $1 AND journey_id = $2", [t.tenantId, hourly.id]);
    assert.equal(due.ended_at.getTime(), due.completes_at.getTime(), "ended when it was due");
    await send(t, { eventType: "signup", customerId: "bo" });
    assert.deepEqual((await enrollments(t, hourly.id)).map((r) => r.status), ["active", "completed"]);
  });

  test("an exit event takes the customer out of the journey; a later trigger enrols again; bad journey fields are 400s", async () => {
    const t = await svc.createTenant();
    await created("offers", { name: unique("offer"), status: "active" }, t);
    const j = await created("journeys", { name: unique("cart"), steps: [{ type: "decision" }], exitEventTypes: ["purchase", "unsubscribe"] }, t);
    assert.deepEqual(j.exitEventTypes, ["purchase", "unsubscribe"]);
    await created("triggers", { name: unique("rule"), eventType: "cart_abandoned", action: { type: "journey", journeyId: j.id } }, t);
    await send(t, [{ eventType: "cart_abandoned", customerId: "cy" }, { eventType: "cart_abandoned", customerId: "dee" }]);
    const purchase = await send(t, { eventType: "purchase", customerId: "cy" });
    const purchaseId = purchase.body.results[0].id;
    let rows = await enrollments(t, j.id);
    const byCustomer = (c: string) => rows.filter((r) => r.customerId === c).map((r) => [r.status, r.exitEventId ?? null]);
    assert.deepEqual(byCustomer("cy"), [["exited", purchaseId]]);
    assert.deepEqual(byCustomer("dee"), [["active", null]], "only the customer the event is about");
    await send(t, { eventType: "cart_abandoned", customerId: "cy" });
    rows = await enrollments(t, j.id);
    assert.deepEqual(byCustomer("cy").map(([s]) => s), ["active", "exited"], "an exited customer enrols again");
    const profile = await call("GET", "/api/v1/customers/cy/unified-profile?sections=journeys", t.apiKey);
    assert.deepEqual(profile.body.sections[0].data.map((e: any) => e.status), ["active", "exited"]);

    for (const [body, field] of [
      [{ exitEventTypes: [""] }, "exitEventTypes[0]"],
      [{ exitEventTypes: Array.from({ length: 21 }, (_, i) => `e${i}`) }, "exitEventTypes"],
      [{ durationHours: 9000 }, "durationHours"],
      [{ durationHours: -1 }, "durationHours"],
    ] as const) {
      const res = await call("POST", "/api/v1/journeys", t.apiKey, { name: unique("bad"), steps: [{ type: "decision" }], ...body });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(res.body.errors.some((e: any) => e.field === field), `${field}: ${JSON.stringify(res.body)}`);
    }
  });

  test("a webhook action is delivered to the receiver with the event, once per rule and event", async () => {
    const t = await svc.createTenant();
    receiver.routes.set("/trigger-hook", { statuses: [200] });
    await created("triggers", {
      name: unique("hook"),
      eventType: "churn_risk",
      conditions: { attribute: "score", op: "gt", value: 0.5 },
      action: { type: "webhook", target: `${receiver.url}/trigger-hook` },
    }, t);
    const res = await send(t, [{ eventType: "churn_risk", customerId: "w1", properties: { score: 0.9 } }, { eventType: "churn_risk", customerId: "w2", properties: { score: 0.1 } }]);
    assert.equal(res.status, 202);
    await svc.running.services.events.settled();
    const hits = receiver.received.filter((r) => r.path === "/trigger-hook");
    assert.equal(hits.length, 1);
    const payload = JSON.parse(hits[0].body);
    assert.equal(payload.event.customerId, "w1");
    assert.equal(payload.event.id, res.body.results[0].id);
    const deliveries = await svc.sql("SELECT count(*)::int AS n FROM notification_deliveries WHERE tenant_id = $1 AND kind = 'trigger' AND status = 'accepted'", [t.tenantId]);
    assert.equal(deliveries[0].n, 1, "recorded by the dispatcher");
  });

  test("a webhook action through a notification provider is signed with the provider's secret; a foreign provider is a 400", async () => {
    const t = await svc.createTenant();
    const secret = "whsec-events-0123456789abcdef";
    receiver.routes.set("/provider-hook", { statuses: [200], secret });
    const provider = await created("notifications/providers", { type: "webhook", name: unique("hook"), config: { url: `${receiver.url}/provider-hook`, secret } }, t);
    const other = await svc.createTenant();
    const foreign = await call("POST", "/api/v1/triggers", other.apiKey, { name: "x", eventType: "e", action: { type: "webhook", providerId: provider.id } });
    assert.equal(foreign.status, 400);
    assert.match(foreign.body.detail, /action\.providerId/);
    await created("triggers", { name: unique("hook"), eventType: "vip", action: { type: "webhook", providerId: provider.id } }, t);
    const res = await send(t, { eventType: "vip", customerId: "p1" });
    assert.equal(res.body.results[0].triggersMatched, 1);
    await svc.running.services.events.settled();
    const hits = receiver.received.filter((r) => r.path === "/provider-hook");
    assert.equal(hits.length, 1);
    assert.equal(hits[0].signatureValid, true);
    assert.equal(JSON.parse(hits[0].body).event.id, res.body.results[0].id);
  });

  test("bad rules are 400s naming the field; a foreign journey is a 400", async () => {
    const t = await svc.createTenant();
    const other = await svc.createTenant();
    const foreign = await journey(other);
    const bad = await call("POST", "/api/v1/triggers", t.apiKey, {
      name: "x",
      eventType: "",
      conditions: { attribute: "a", op: "nope" },
      action: { type: "journey", journeyId: foreign.id },
    });
    assert.equal(bad.status, 400);
    for (const field of ["eventType", "conditions", "action.journeyId"]) assert.ok(bad.body.detail.includes(field), `${field} in ${bad.body.detail}`);
    const noAction = await call("POST", "/api/v1/triggers", t.apiKey, { name: "x", eventType: "e" });
    assert.equal(noAction.status, 400);
    assert.match(noAction.body.detail, /action/);
    const badTarget = await call("POST", "/api/v1/triggers", t.apiKey, { name: "x", eventType: "e", action: { type: "webhook", target: "ftp://x" } });
    assert.equal(badTarget.status, 400);
    assert.match(badTarget.body.detail, /action.target/);
    const badStep = await call("POST", "/api/v1/journeys", t.apiKey, { name: "j", steps: [{ type: "sleep" }] });
    assert.equal(badStep.status, 400);
    assert.match(badStep.body.detail, /steps\[0\]\.type/);
    // A step's flow, an id or key as Recommend takes it, must be one of the tenant's live flows (spec 7).
    const neighbour = await svc.createTenant();
    const theirs = await call("POST", "/api/v1/decision-flows", neighbour.apiKey, { name: "theirs", key: "their-flow" });
    const mine = await call("POST", "/api/v1/decision-flows", t.apiKey, { name: "mine", key: "my-flow" });
    for (const flow of [theirs.body.id, "their-flow", "no-such-flow"]) {
      const res = await call("POST", "/api/v1/journeys", t.apiKey, { name: unique("j"), steps: [{ type: "decision", flow: mine.body.key }, { type: "decision", flow }] });
      assert.equal(res.status, 400, flow);
      assert.deepEqual(res.body.errors.map((e: any) => e.field), ["steps[1].flow"]);
    }
    for (const flow of [mine.body.id, mine.body.key]) {
      assert.equal((await call("POST", "/api/v1/journeys", t.apiKey, { name: unique("j"), steps: [{ type: "decision", flow }] })).status, 201, flow);
    }
  });

  test("another tenant's triggers and journeys are 404s; CRUD works in one's own", async () => {
    const t = await svc.createTenant();
    const other = await svc.createTenant();
    const j = await journey(t);
    const rule = await created("triggers", { name: unique("rule"), eventType: "e", action: { type: "journey", journeyId: j.id } }, t);
    for (const [method, path, body] of [
      ["GET", `/api/v1/triggers/${rule.id}`],
      ["PUT", `/api/v1/triggers/${rule.id}`, { name: "n", eventType: "e", action: { type: "journey", journeyId: j.id } }],
      ["DELETE", `/api/v1/triggers/${rule.id}`],
      ["GET", `/api/v1/journeys/${j.id}`],
      ["PUT", `/api/v1/journeys/${j.id}`, { name: "n", steps: [{ type: "decision" }] }],
      ["DELETE", `/api/v1/journeys/${j.id}`],
      ["GET", `/api/v1/journeys/${j.id}/enrollments`],
    ] as Array<[string, string, unknown?]>) {
      assert.equal((await call(method, path, other.apiKey, body)).status, 404, `${method} ${path}`);
    }
    assert.deepEqual((await call("GET", "/api/v1/triggers", other.apiKey)).body.data, []);

    const updated = await call("PUT", `/api/v1/triggers/${rule.id}`, t.apiKey, { name: rule.name, eventType: "e2", status: "inactive", action: { type: "journey", journeyId: j.id } });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.eventType, "e2");
    assert.equal(updated.body.version, 2);
    assert.equal((await send(t, { eventType: "e2", customerId: "c" })).body.results[0].triggersMatched, 0, "inactive rules are not evaluated");
    assert.equal((await call("POST", "/api/v1/triggers", t.apiKey, { name: rule.name, eventType: "e", action: { type: "journey", journeyId: j.id } })).status, 409);
    const removed = await call("DELETE", `/api/v1/triggers/${rule.id}`, t.apiKey);
    assert.deepEqual([removed.status, removed.body], [204, null], "spec 7: 204 without a body");
    assert.equal((await call("GET", `/api/v1/triggers/${rule.id}`, t.apiKey)).status, 404);
    const journeyRemoved = await call("DELETE", `/api/v1/journeys/${j.id}`, t.apiKey);
    assert.deepEqual([journeyRemoved.status, journeyRemoved.body], [204, null]);
    assert.equal((await call("GET", `/api/v1/journeys/${j.id}`, t.apiKey)).status, 404);
    const audit = await svc.sql("SELECT action FROM audit_log WHERE tenant_id = $1 AND entity_id = $2 ORDER BY seq", [t.tenantId, rule.id]);
    assert.deepEqual(audit.map((a) => a.action), ["create", "update", "soft_delete"]);
  });
});

describe("retention (EVENT_RETENTION_DAYS)", () => {
  test("the daily job deletes every tenant's events older than the retention in bounded batches, and keeps the rest", async () => {
    const [a, b] = [await svc.createTenant(), await svc.createTenant()];
    const DAY = 86_400_000;
    const slot = new Date();
    // 7 old and 2 recent events in A, 4 old and 1 recent in B; times as clients may send them.
    for (const [t, old, recent] of [[a, 7, 2], [b, 4, 1]] as const) {
      const events = [
        ...Array.from({ length: old }, (_, i) => ({ eventType: "view", customerId: `c${i}`, timestamp: new Date(slot.getTime() - (400 + i) * DAY).toISOString() })),
        ...Array.from({ length: recent }, (_, i) => ({ eventType: "view", customerId: `c${i}`, timestamp: new Date(slot.getTime() - (300 - i) * DAY).toISOString() })),
      ];
      assert.equal((await send(t, events)).status, 202);
    }
    const job = svc.running.services.jobs.find((j) => j.name === "events-retention");
    assert.ok(job, "registered with the scheduler");
    assert.equal(svc.config.eventRetentionDays, 365, "the documented default");
    assert.deepEqual([job.schedule, job.route], [{ cron: "41 3 * * *", timezone: "UTC" }, "tick"]);

    // The same job over the real store with batches of 3, counting the statements it runs.
    const store = new EventStore(svc.running.foundation.db);
    const calls: Array<{ tenantId: string; deleted: number }> = [];
    const counted = {
      nextTenantWithEvents: (after: string | null) => store.nextTenantWithEvents(after),
      deleteOlderThan: async (tenantId: string, cutoff: Date, limit: number) => {
        const deleted = await store.deleteOlderThan(tenantId, cutoff, limit);
        calls.push({ tenantId, deleted });
        return deleted;
      },
    };
    await eventRetentionJob(counted, 365, svc.running.foundation.logger, 3).run(slot);
    const left = async (t: Tenant) =>
      (await svc.sql("SELECT count(*) FILTER (WHERE occurred_at < $2)::int AS old, count(*)::int AS total FROM customer_events WHERE tenant_id = $1", [t.tenantId, new Date(slot.getTime() - 365 * DAY)]))[0];
    assert.deepEqual(await left(a), { old: 0, total: 2 });
    assert.deepEqual(await left(b), { old: 0, total: 1 });
    assert.ok(calls.every((c) => c.deleted <= 3), "no statement deletes more than a batch");
    assert.deepEqual(calls.filter((c) => c.tenantId === a.tenantId).map((c) => c.deleted), [3, 3, 1]);
    assert.deepEqual(calls.filter((c) => c.tenantId === b.tenantId).map((c) => c.deleted), [3, 1]);
    // A second run of the slot (a retry) finds nothing more to delete.
    calls.length = 0;
    await eventRetentionJob(counted, 365, svc.running.foundation.logger, 3).run(slot);
    assert.equal(calls.reduce((sum, c) => sum + c.deleted, 0), 0);
    assert.deepEqual(await left(a), { old: 0, total: 2 });
  });
});

describe("without Redis", () => {
  test("events are accepted with streamId null and triggers still run", async () => {
    const local = await startTestService({ redisUrl: null });
    try {
      const t = await local.createTenant();
      const j = await rest(local.baseUrl, "POST", "/api/v1/journeys", { key: t.apiKey, body: { name: "j", steps: [{ type: "decision" }] } });
      assert.equal(j.status, 201);
      const rule = await rest(local.baseUrl, "POST", "/api/v1/triggers", { key: t.apiKey, body: { name: "r", eventType: "e", action: { type: "journey", journeyId: j.body.id } } });
      assert.equal(rule.status, 201);
      const res = await rest(local.baseUrl, "POST", "/api/v1/events", { key: t.apiKey, body: { eventType: "e", customerId: "c" } });
      assert.equal(res.status, 202);
      assert.deepEqual(res.body.results.map((r: any) => [r.streamId, r.triggersEvaluated, r.triggersMatched]), [[null, true, 1]]);
    } finally {
      await local.stop();
    }
  });
});

describe("rate limit", () => {
  test("500 events per minute counts items, not requests", async () => {
    const t = await svc.createTenant();
    await svc.running.services.identityStore.setTenantRateLimits(t.tenantId, { events: { limit: 10, windowSeconds: 60 } });
    const batch = (size: number) => Array.from({ length: size }, () => ({ eventType: "r" }));
    assert.equal((await send(t, batch(6))).status, 202);
    const over = await send(t, batch(5));
    assert.equal(over.status, 429, JSON.stringify(over.body));
    assert.ok(Number(over.headers.get("retry-after")) >= 1);
    const fits = await send(t, batch(4));
    assert.equal(fits.status, 202);
    assert.equal(fits.headers.get("x-ratelimit-remaining"), "0");
    assert.equal((await send(t, batch(1))).status, 429);
  });
});

function chunk(flat: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

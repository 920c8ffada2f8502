import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { Worker } from "node:worker_threads";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { startRedisCluster, type RedisClusterUnderTest } from "../support/redis-cluster.js";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";
import { createRedis, connectRedis, isCluster, tenantKey, type Cluster } from "../../src/platform/redis.js";
import { createRedisBus } from "../../src/platform/bus.js";
import { createRedisCustomerCounterWipe, createRedisTenantCounterWipe } from "../../src/decisions/tenant-counter-wipe.js";
import { customerCounterPrefix } from "../../src/core/counters.js";
import { freePort } from "../../src/platform/embedded-postgres.js";
import { createRedisRequestStats } from "../../src/observability/redis-request-stats.js";
import { eventStreamKey } from "../../src/platform/redis.js";
import type { Logger } from "../../src/platform/logger.js";

/**
 * The whole service on a real three-master Redis Cluster (test/support/redis-cluster.ts) and real
 * PostgreSQL, with a second service process on the same cluster: every Redis-backed feature must
 * work when a tenant's keys live on one node of three and the processes' connections on others.
 */
let cluster: RedisClusterUnderTest;
let svc: TestService;
let child: ChildService;
/** One plain connection per master, for looking at where keys are. */
let masters: Redis[];
const ticks: Array<{ job: string; outcome: string }> = [];

type Tenant = { tenantId: string; userId: string; apiKey: string };

const EVENTS_LIMIT = 4;

before(async () => {
  cluster = await startRedisCluster(3);
  masters = cluster.nodes.map((n) => new Redis(n.port, n.host));
  svc = await startTestService(
    { redisUrl: null, redisClusterNodes: cluster.nodes, rateLimits: { events: { limit: EVENTS_LIMIT, windowSeconds: 60 } }, schedulerEnabled: true },
    undefined,
    undefined,
    {
      extraJobs: () => [{ name: "cluster-tick", schedule: { everyMs: 1_000 }, run: async () => {} }],
      scheduler: { onRun: (job, _slot, outcome) => void ticks.push({ job, outcome }) },
    },
  );
  child = await startChildService(svc, { env: { RATE_LIMITS: JSON.stringify(svc.config.rateLimits) } });
});
after(async () => {
  await child?.stop();
  await svc?.stop();
  for (const m of masters ?? []) m.disconnect();
  await cluster?.stop();
});

const post = (path: string, key: string, body: unknown, baseUrl = svc.baseUrl) => rest(baseUrl, "POST", path, { key, body });

async function create(path: string, body: Record<string, unknown>, t: Tenant) {
  const res = await post(`/api/v1/${path}`, t.apiKey, body);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

const dataKey = async (t: Tenant): Promise<string> => (await create("api-keys", { name: `sdk-${randomBytes(3).toString("hex")}` }, t)).key;

/** How many of the tenant's keys each master holds. */
/**
 * The tenant's keys on each master, less its request statistics: every process flushes those about
 * once a second, so the requests of the test itself (the reset included) may land after any count.
 */
async function tenantKeysPerMaster(tenantId: string): Promise<number[]> {
  const stats = tenantKey(tenantId, "reqstats", "");
  return Promise.all(masters.map(async (m) => (await m.keys(`${svc.config.redisKeyPrefix}${tenantKey(tenantId, "*")}`)).filter((k) => !k.includes(stats)).length));
}

/** Whether the master of its slot holds the tenant's event stream, `<REDIS_KEY_PREFIX>events:<tenantId>` (0 or 1). */
async function streamsOnMasters(tenantId: string): Promise<number> {
  const key = `events:${tenantId}`;
  return masters[await masterOf(key)].exists(`${svc.config.redisKeyPrefix}${key}`);
}

/** The index in `masters` of the master that serves `key`'s slot (REDIS_KEY_PREFIX included), as the cluster computes it. */
async function masterOf(key: string): Promise<number> {
  const slot = (await masters[0].cluster("KEYSLOT", svc.config.redisKeyPrefix + key)) as number;
  const [address] = (svc.running.foundation.redis as Cluster).slots[slot];
  return cluster.nodes.findIndex((n) => `${n.host}:${n.port}` === address);
}

/** A tenant id whose keys live on the master `index`. */
async function tenantOnMaster(index: number): Promise<string> {
  for (;;) {
    const id = randomUUID();
    if ((await masterOf(tenantKey(id, "x"))) === index) return id;
  }
}

function recordingLogger(warnings: string[]): Logger {
  const log = { warn: (_: unknown, msg: string) => warnings.push(msg), error: () => {}, info: () => {}, debug: () => {} };
  return log as unknown as Logger;
}

describe("the service on a three-master Redis Cluster", () => {
  test("REDIS_CLUSTER_NODES builds a Cluster client that knows all three masters", async () => {
    const redis = svc.running.foundation.redis!;
    assert.ok(isCluster(redis));
    assert.equal(redis.nodes("master").length, 3);
    assert.equal((await rest(svc.baseUrl, "GET", "/healthz")).status, 200);
    assert.equal((await rest(child.baseUrl, "GET", "/healthz")).status, 200);
  });

  test("Recommend and Respond: a frequency cap holds under parallel requests on two processes, learning is counted, all on the tenant's one slot", async () => {
    const t = await svc.createTenant();
    const capped = await create("offers", { name: "capped", status: "active", priority: 90 }, t);
    const other = await create("offers", { name: "other", status: "active", priority: 10 }, t);
    await create("contact-policies", { name: "once a day", config: { scope: "offer", maxImpressions: 1, windowSeconds: 86400 } }, t);
    const key = await dataKey(t);

    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, i) => post("/api/v1/recommend", key, { customerId: "ana" }, i % 2 ? child.baseUrl : svc.baseUrl)),
    );
    assert.ok(answers.every((a) => a.status === 200), JSON.stringify(answers.map((a) => a.body)));
    for (const offer of [capped, other]) {
      const served = answers.filter((a) => a.body.offers.some((o: { offerId: string }) => o.offerId === offer.id)).length;
      assert.equal(served, 1, `${offer.name}: a cap of one per offer is never overshot`);
    }

    const rec = (await post("/api/v1/recommend", key, { customerId: "bo" })).body;
    assert.equal(rec.offers[0].offerId, capped.id, "the cap is per customer");
    const respond = { customerId: "bo", outcome: "click", idempotencyKey: "k-1", recommendationId: rec.recommendationId, rank: 1 };
    const recorded = await post("/api/v1/respond", key, respond, child.baseUrl);
    assert.equal(recorded.status, 200, JSON.stringify(recorded.body));
    assert.equal(recorded.body.status, "recorded");
    const replay = await post("/api/v1/respond", key, respond);
    assert.equal(replay.body.status, "already_recorded");

    const redis = svc.running.foundation.redis!;
    const [successes, trials] = await redis.hmget(tenantKey(t.tenantId, "ad:*"), `${capped.id}:s`, `${capped.id}:t`);
    assert.deepEqual([successes, trials], ["1", "2"], "one impression each to ana and bo, one click: counted by the Lua scripts on the cluster");
    assert.equal(await redis.hget(tenantKey(t.tenantId, "ad:*"), `${other.id}:t`), "2", "the cap applies to each offer: once to ana, once to bo");
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/workspace/usage", { key: t.apiKey })).body.decisionsUsed, 2, "the decisions that served offers: ana's first, bo's");

    const perMaster = await tenantKeysPerMaster(t.tenantId);
    assert.equal(perMaster.filter((n) => n > 0).length, 1, `the tenant's keys share one slot, so one master: ${perMaster}`);
  });

  test("a rate limit is one window across both processes", async () => {
    const t = await svc.createTenant();
    for (let i = 0; i < EVENTS_LIMIT; i++) {
      const res = await post("/api/v1/events", t.apiKey, { eventType: "view", customerId: "c" }, i % 2 ? child.baseUrl : svc.baseUrl);
      assert.equal(res.status, 202, JSON.stringify(res.body));
    }
    const refused = await post("/api/v1/events", t.apiKey, { eventType: "view", customerId: "c" }, child.baseUrl);
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get("x-ratelimit-limit"), String(EVENTS_LIMIT));
  });

  test("an accepted event lands in the tenant's stream on the cluster", async () => {
    const t = await svc.createTenant();
    const res = await post("/api/v1/events", t.apiKey, { eventType: "page_view", customerId: "c1", properties: { page: "/home" } });
    assert.equal(res.status, 202, JSON.stringify(res.body));
    const [result] = res.body.results;
    assert.match(result.streamId, /^\d+-\d+$/);
    const entries = await svc.running.foundation.redis!.xrange(eventStreamKey(t.tenantId), "-", "+");
    assert.deepEqual(entries.map(([id]) => id), [result.streamId]);
    assert.ok(entries[0][1].includes("page_view"));
    assert.equal(await streamsOnMasters(t.tenantId), 1, "spec 6's name, after REDIS_KEY_PREFIX");

    // GDPR erasure reads and trims the stream on whichever master its key hashes to.
    assert.equal((await post("/api/v1/events", t.apiKey, { eventType: "page_view", customerId: "c2" })).status, 202);
    const erased = await rest(svc.baseUrl, "DELETE", "/api/v1/export/full?customerId=c1", { key: t.apiKey, headers: { "x-requested-with": "test" } });
    assert.equal(erased.status, 200, JSON.stringify(erased.body));
    assert.equal(erased.body.removed.eventStreamEntries, 1);
    const left = await svc.running.foundation.redis!.xrange(eventStreamKey(t.tenantId), "-", "+");
    assert.deepEqual(left.map(([, fields]) => fields[fields.indexOf("customerId") + 1]), ["c2"]);
  });

  test("a revoked key is refused by the other process as soon as the revocation answers", async () => {
    const t = await svc.createTenant();
    const doomed = await create("api-keys", { name: "doomed", scopes: ["control-plane"] }, t);
    assert.equal((await rest(child.baseUrl, "GET", "/api/v1/api-keys", { key: doomed.key })).status, 200, "the other process has cached the key");
    const revoked = await rest(svc.baseUrl, "DELETE", `/api/v1/api-keys?id=${doomed.id}`, { key: t.apiKey, body: {} });
    assert.equal(revoked.status, 204);
    assert.equal((await rest(child.baseUrl, "GET", "/api/v1/api-keys", { key: doomed.key })).status, 401);
  });

  test("workspace reset deletes the tenant's keys from every master and leaves another tenant's", async () => {
    const [a, b] = [await svc.createTenant(), await svc.createTenant()];
    for (const t of [a, b]) {
      await create("offers", { name: "o", status: "active" }, t);
      const key = await dataKey(t);
      for (const customerId of ["ana", "bo"]) assert.equal((await post("/api/v1/recommend", key, { customerId })).status, 200);
      assert.equal((await post("/api/v1/events", t.apiKey, { eventType: "view", customerId: "ana" })).status, 202);
    }
    const before = { a: await tenantKeysPerMaster(a.tenantId), b: await tenantKeysPerMaster(b.tenantId) };
    assert.ok(before.a.reduce((x, y) => x + y) > 1, `the decision count, evidence: ${before.a}`);
    assert.deepEqual([await streamsOnMasters(a.tenantId), await streamsOnMasters(b.tenantId)], [1, 1], "each tenant's events:<tenantId>");

    const reset = await post("/api/v1/workspace/reset", a.apiKey, { confirm: a.tenantId }, child.baseUrl);
    assert.equal(reset.status, 200, JSON.stringify(reset.body));
    assert.deepEqual(await tenantKeysPerMaster(a.tenantId), [0, 0, 0], "no key of the tenant on any master");
    assert.equal(await streamsOnMasters(a.tenantId), 0, "the stream, outside the tenant's hash tag, is deleted by name");
    assert.deepEqual(await tenantKeysPerMaster(b.tenantId), before.b, "the other tenant's keys are untouched");
    assert.equal(await streamsOnMasters(b.tenantId), 1);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/workspace/usage", { key: a.apiKey })).body.decisionsUsed, 0);
  });

  test("the wipes SCAN every master: a customer's counters and a whole tenant, for tenants on each of the three", async () => {
    const redis = svc.running.foundation.redis!;
    const tenants = await Promise.all([0, 1, 2].map(tenantOnMaster));
    const tenantWipe = createRedisTenantCounterWipe(redis);
    const customerWipe = createRedisCustomerCounterWipe(redis);
    for (const [master, id] of tenants.entries()) {
      await redis.set(tenantKey(id, `${customerCounterPrefix("ana")}offer:o1`), "1");
      await redis.set(tenantKey(id, `${customerCounterPrefix("ana")}offer:o2`), "1");
      await redis.set(tenantKey(id, `${customerCounterPrefix("bo")}offer:o1`), "1");
      await redis.xadd(eventStreamKey(id), "*", "customerId", "ana");
      assert.deepEqual(await tenantKeysPerMaster(id), [0, 1, 2].map((i) => (i === master ? 3 : 0)));
      assert.equal(await customerWipe.forgetCustomer(id, "ana"), 2);
      assert.deepEqual(await tenantKeysPerMaster(id), [0, 1, 2].map((i) => (i === master ? 1 : 0)), "bo's counter stays");
      await tenantWipe.resetTenant(id);
      assert.deepEqual(await tenantKeysPerMaster(id), [0, 0, 0]);
      assert.equal(await streamsOnMasters(id), 0);
    }
  });

  test("an unreachable REDIS_CLUSTER_NODES fails start-up at once", async () => {
    const closed = await freePort();
    const started = Date.now();
    await assert.rejects(
      startTestService({ redisUrl: null, redisClusterNodes: [{ host: "127.0.0.1", port: closed }] }),
      /Redis Cluster at REDIS_CLUSTER_NODES is unreachable/,
    );
    assert.ok(Date.now() - started < 15_000);
  });

  test("request statistics of tenants on different masters are flushed, one pipeline per tenant", async () => {
    const warnings: string[] = [];
    const stats = createRedisRequestStats(svc.running.foundation.redis!, recordingLogger(warnings), { flushIntervalMs: 60_000 });
    try {
      const tenants = await Promise.all([0, 1, 2].map(tenantOnMaster));
      tenants.forEach((id, i) => {
        for (let n = 0; n <= i; n++) stats.record(id, 20, 500);
      });
      await stats.flush();
      assert.deepEqual(warnings, []);
      const from = new Date(Date.now() - 120_000);
      const to = new Date(Date.now() + 60_000);
      assert.deepEqual(await Promise.all(tenants.map((id) => stats.http5xxCount(id, from, to))), [1, 2, 3]);
    } finally {
      await stats.close();
    }
  });

  test("a confirmed publish waits for a slow receiver subscribed through another node", async () => {
    const prefix = `bus:${randomBytes(4).toString("hex")}:`;
    const applied = new Int32Array(new SharedArrayBuffer(4));
    const entry = new URL("../support/bus-receiver.ts", import.meta.url).href;
    const receiver = new Worker(`import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`, {
      eval: true,
      workerData: { redisAt: cluster.nodes, prefix, channel: "slow", handlerMs: 300, applied },
    });
    const redis = createRedis(cluster.nodes, prefix);
    await connectRedis(redis);
    const warnings: string[] = [];
    const bus = await createRedisBus(redis, prefix, recordingLogger(warnings));
    try {
      await new Promise((resolve, reject) => receiver.once("message", resolve).once("error", reject));
      // PUBLISH goes to one master of three, and each subscriber sits on one: repeat, so that the
      // publishing node is most likely not the receiver's at least once.
      for (let round = 1; round <= 4; round++) {
        await bus.publish("slow", `m${round}`, { confirmed: true });
        assert.equal(Atomics.load(applied, 0), round, `round ${round}: the receiver applied the message before publish returned`);
      }
      assert.deepEqual(warnings, [], "no round waited for the timeout");
    } finally {
      await bus.close();
      redis.disconnect();
      receiver.postMessage("stop");
      await new Promise((r) => receiver.once("exit", r));
    }
  });

  test("the scheduler runs on BullMQ over the cluster, its queue under one hash tag", async () => {
    assert.equal(svc.running.services.scheduler.driver, "bullmq");
    for (let i = 0; !ticks.some((r) => r.job === "cluster-tick" && r.outcome === "succeeded"); i++) {
      assert.ok(i < 150, `the tick job ran on the cluster: ${JSON.stringify(ticks)}`);
      await sleep(100);
    }
    const perMaster = await Promise.all(masters.map(async (m) => (await m.keys(`${svc.config.redisKeyPrefix}{scheduler}:*`)).length));
    assert.equal(perMaster.filter((n) => n > 0).length, 1, `one slot, one master: ${perMaster}`);
  });
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { pino } from "pino";
import { createRedis, connectRedis, tenantKey, type Redis } from "../../src/platform/redis.js";
import { createRedisRequestStats } from "../../src/observability/redis-request-stats.js";
import { createMemoryRequestStats, type RecordingRequestStats } from "../../src/observability/request-stats.js";
import { latencyBucket, latencyQuantile, LATENCY_BUCKETS } from "../../src/observability/latency-histogram.js";
import { requireEnv } from "../support/database.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

const silent = pino({ level: "silent" });
const prefix = `test:${randomBytes(6).toString("hex")}:`;
let redis: Redis;
const open: RecordingRequestStats[] = [];

/** A fresh instance, as another process on the same Redis would have. */
function redisStats(): RecordingRequestStats {
  const stats = createRedisRequestStats(redis, silent, { flushIntervalMs: 60_000 });
  open.push(stats);
  return stats;
}

before(async () => {
  redis = createRedis(requireEnv("TEST_REDIS_URL"), prefix);
  await connectRedis(redis);
});
after(async () => {
  for (const s of open) await s.close();
  redis.disconnect();
});

// Whole minutes in the recent past, so that the windows below are within the retention.
const base = Math.floor(Date.now() / 60_000) * 60_000 - 10 * 60_000;
const at = (minute: number, second = 0) => base + minute * 60_000 + second * 1000;
const window = (fromMinute: number, toMinute: number) => [new Date(at(fromMinute)), new Date(at(toMinute))] as const;

/** The p99 the merged histogram must give: computed from the same fixed buckets. */
function expectedP99(durations: number[]): number {
  const counts = new Array<number>(LATENCY_BUCKETS).fill(0);
  for (const d of durations) counts[latencyBucket(d)]++;
  return latencyQuantile(counts, 0.99)!;
}

describe("RequestStats shared through Redis", () => {
  test("two processes' counts merge: p99 over the merged histogram, 5xx summed, across minutes", async () => {
    const [a, b] = [redisStats(), redisStats()];
    const tenant = randomUUID();
    // Process a saw a few slow calls, b many fast ones: a's own p99 is slow, the tenant's is not.
    const fastA = Array.from({ length: 95 }, (_, i) => 5 + (i % 10));
    const slowA = [900, 950, 1_100, 1_900, 2_000];
    const fastB = Array.from({ length: 900 }, (_, i) => 8 + (i % 5));
    fastA.forEach((d, i) => a.record(tenant, d, 200, at(0, i % 60)));
    slowA.forEach((d) => a.record(tenant, d, 503, at(1, 5)));
    fastB.forEach((d, i) => b.record(tenant, d, i < 3 ? 500 : 200, at(1 + (i % 2), i % 60)));
    await b.flush();

    const all = [...fastA, ...slowA, ...fastB];
    const p99 = await a.latencyP99Ms(tenant, ...window(0, 3));
    assert.equal(p99, expectedP99(all));
    assert.ok(p99! < 20, `the tenant's p99 is among the fast calls (${p99})`);
    assert.ok(expectedP99([...fastA, ...slowA]) > 800, "process a alone would have said otherwise");
    assert.equal(await b.latencyP99Ms(tenant, ...window(0, 3)), p99, "either process reads the same");
    assert.equal(await a.http5xxCount(tenant, ...window(0, 3)), 8);

    // [from, to): minute 2 is outside [0, 2), and a window inside a minute covers that whole minute.
    assert.equal(await b.http5xxCount(tenant, ...window(1, 2)), 7);
    assert.equal(await b.http5xxCount(tenant, new Date(at(1, 10)), new Date(at(1, 20))), 7);
    assert.equal(await b.latencyP99Ms(tenant, ...window(1, 2)), expectedP99([...slowA, ...fastB.filter((_, i) => i % 2 === 0)]));
    assert.equal(await b.http5xxCount(tenant, ...window(2, 3)), 1);
  });

  test("counts live under the tenant's hash tag, per minute, and expire", async () => {
    const stats = redisStats();
    const tenant = randomUUID();
    stats.record(tenant, 12, 200, at(4));
    stats.record(tenant, 12, 502, at(4, 59));
    assert.equal(await stats.http5xxCount(tenant, ...window(4, 5)), 1);
    const key = tenantKey(tenant, "reqstats", String(Math.floor(at(4) / 60_000)));
    const hash = await redis.hgetall(key);
    assert.equal(Number(hash[`b${latencyBucket(12)}`]), 2);
    assert.equal(hash.e, "1");
    const ttl = await redis.ttl(key);
    assert.ok(ttl > 47 * 3600 && ttl <= 48 * 3600, `kept about two days (ttl ${ttl} s)`);
  });

  test("tenants are counted apart; no requests is a null p99 and no 5xx", async () => {
    const stats = redisStats();
    const [t1, t2] = [randomUUID(), randomUUID()];
    stats.record(t1, 40, 500, at(5));
    assert.equal(await stats.http5xxCount(t2, ...window(5, 6)), 0);
    assert.equal(await stats.latencyP99Ms(t2, ...window(5, 6)), null);
    assert.equal(await stats.http5xxCount(t1, ...window(5, 6)), 1);
  });

  test("the in-process stand-in (no REDIS_URL) answers the same", async () => {
    const stats = createMemoryRequestStats();
    open.push(stats);
    const tenant = randomUUID();
    const durations = [3, 7, 7, 30, 120, 480, 4_000];
    durations.forEach((d, i) => stats.record(tenant, d, i % 3 === 0 ? 500 : 200, at(6, i)));
    assert.equal(await stats.latencyP99Ms(tenant, ...window(6, 7)), expectedP99(durations));
    assert.equal(await stats.http5xxCount(tenant, ...window(6, 7)), 3);
    assert.equal(await stats.http5xxCount(tenant, ...window(7, 8)), 0);
  });
});

describe("the gateway feeds the shared statistics", () => {
  let first: TestService;
  let second: TestService;
  before(async () => {
    first = await startTestService();
    // A second service on the same database and Redis prefix: another process's buffer and flushes.
    second = await startTestService({ redisKeyPrefix: first.config.redisKeyPrefix }, first.config.databaseUrl!);
  });
  after(async () => {
    await second.stop();
    await first.stop();
  });

  test("calls answered by two services count once each in the tenant's minute, whichever door and status", async () => {
    const t = await first.createTenant();
    const from = new Date();
    const calls = [
      rest(first.baseUrl, "GET", "/api/v1/system-health", { key: t.apiKey }),
      rest(first.baseUrl, "GET", "/api/v1/system-health?limit=0", { key: t.apiKey }),
      rest(second.baseUrl, "GET", "/api/v1/system-health", { key: t.apiKey }),
      rest(second.baseUrl, "GET", "/api/v1/audit-logs", { key: t.apiKey }),
      rest(second.baseUrl, "GET", "/api/v1/system-health", { key: "krn_not-a-key" }), // no tenant: not counted
    ];
    const statuses = (await Promise.all(calls)).map((r) => r.status);
    assert.deepEqual(statuses, [200, 400, 200, 200, 401]);
    await second.running.services.observability.requestStats.flush(); // as its next tick would
    const stats = first.running.services.observability.requestStats;
    const to = new Date(Date.now() + 1);
    assert.equal(await stats.http5xxCount(t.tenantId, from, to), 0);
    const p99 = await stats.latencyP99Ms(t.tenantId, from, to);
    assert.ok(p99 !== null && p99 > 0);
    let counted = 0;
    const raw = createRedis(requireEnv("TEST_REDIS_URL"), first.config.redisKeyPrefix);
    await connectRedis(raw);
    try {
      for (let m = Math.floor(from.getTime() / 60_000); m <= Math.floor(to.getTime() / 60_000); m++) {
        const hash = await raw.hgetall(tenantKey(t.tenantId, "reqstats", String(m)));
        for (const [field, n] of Object.entries(hash)) if (field.startsWith("b")) counted += Number(n);
      }
    } finally {
      raw.disconnect();
    }
    assert.equal(counted, 4);
  });
});

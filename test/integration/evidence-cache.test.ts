import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { createRedis, connectRedis, tenantKey, type Redis } from "../../src/platform/redis.js";
import { createMemoryCounters, createRedisCounters, type Counters } from "../../src/decisions/counters.js";
import { withEvidenceCache } from "../../src/decisions/evidence-cache.js";
import { requireEnv } from "../support/database.js";

/** The per-process evidence cache over real Redis: another process's writes land after maxAge, own writes at once. */
let redis: Redis;
before(async () => {
  redis = createRedis(requireEnv("TEST_REDIS_URL"), `test:${randomBytes(6).toString("hex")}:`);
  await connectRedis(redis);
});
after(() => redis.quit());

describe("adaptive evidence cache", () => {
  test("serves what it read until maxAge, then refreshes; this process's own counts show at once", async () => {
    let clock = 1_000_000;
    const counters = withEvidenceCache(createRedisCounters(redis), { maxAgeMs: 1000, now: () => clock });
    const tenant = randomUUID();
    const [a, b] = [`${randomUUID()}|*`, `${randomUUID()}|*`];
    // Another process counts directly in Redis.
    const elsewhere = (offerKey: string, field: "s" | "t") => redis.hincrby(tenantKey(tenant, "ad:*"), `${offerKey.split("|")[0]}:${field}`, 1);

    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), {});
    await elsewhere(a, "t");
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), {}, "younger than maxAge: served from memory");

    await counters.decisionCounter.countDecision(tenant, null, [b]);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), { [b]: { successes: 0, trials: 1 } }, "own impressions show at once");
    await counters.evidence.addSuccess(tenant, b);
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [b]))[b], { successes: 1, trials: 1 });

    clock += 1000;
    // Stale: served once more while one refresh runs, then the refreshed values.
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), {});
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), { [a]: { successes: 0, trials: 1 }, [b]: { successes: 1, trials: 1 } });

    await counters.wipe.resetTenant(tenant);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), {}, "a workspace reset empties the cache too");
  });

  test("holds at most maxEntries: an evicted key is read from Redis again", async () => {
    const counters = withEvidenceCache(createRedisCounters(redis), { maxAgeMs: 60_000, maxEntries: 1 });
    const tenant = randomUUID();
    const [a, b] = [`${randomUUID()}|*`, `${randomUUID()}|*`];
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), {});
    await redis.hincrby(tenantKey(tenant, "ad:*"), `${a.split("|")[0]}:t`, 1);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), {}, "still cached");
    await counters.evidence.readEvidence(tenant, [b]);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), { [a]: { successes: 0, trials: 1 } }, "evicted by b, read again");
  });

  test("maxAge 0 reads Redis every time", async () => {
    const counters = withEvidenceCache(createRedisCounters(redis), { maxAgeMs: 0 });
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [key]), {});
    await redis.hincrby(tenantKey(tenant, "ad:*"), `${key.split("|")[0]}:t`, 1);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [key]), { [key]: { successes: 0, trials: 1 } });
  });
});

describe("counting a decision with its impressions' trials", () => {
  for (const [name, make] of [
    ["Redis", () => createRedisCounters(redis)],
    ["in-memory (single-node default)", () => createMemoryCounters()],
  ] as Array<[string, () => Counters]>) {
    test(`${name}: trials count only with the decision, never past the quota, and can be taken back`, async () => {
      const counters = make();
      const tenant = randomUUID();
      const [a, b] = [`${randomUUID()}|bucket-1`, `${randomUUID()}|bucket-2`];
      assert.equal(await counters.decisionCounter.countDecision(tenant, 2, [a, b]), 1);
      assert.equal(await counters.decisionCounter.countDecision(tenant, 2, [a]), 2);
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), { [a]: { successes: 0, trials: 2 }, [b]: { successes: 0, trials: 1 } });
      assert.equal(await counters.decisionCounter.countDecision(tenant, 2, [a, b]), null, "quota spent");
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), { [a]: { successes: 0, trials: 2 }, [b]: { successes: 0, trials: 1 } }, "a refused count adds no trials");
      await counters.decisionCounter.uncountDecision(tenant, [b]);
      assert.equal(await counters.decisionCounter.decisions(tenant), 1);
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), { [a]: { successes: 0, trials: 2 }, [b]: { successes: 0, trials: 0 } });
    });
  }

  test("under parallel requests the quota admits exactly its limit and trials match the decisions counted", async () => {
    const counters = createRedisCounters(redis);
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    const counts = await Promise.all(Array.from({ length: 40 }, () => counters.decisionCounter.countDecision(tenant, 25, [key])));
    assert.equal(counts.filter((c) => c !== null).length, 25);
    assert.deepEqual(new Set(counts.filter((c) => c !== null)), new Set(Array.from({ length: 25 }, (_, i) => i + 1)));
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[key], { successes: 0, trials: 25 });
  });
});

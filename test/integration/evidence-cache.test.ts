import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { createRedis, connectRedis, tenantKey, type Redis } from "../../src/platform/redis.js";
import { createMemoryCounters, createRedisCounters, type Counters } from "../../src/decisions/counters.js";
import { withEvidenceCache } from "../../src/decisions/evidence-cache.js";
import type { AdaptiveEvidence, Exposure } from "../../src/decisions/evidence-store.js";
import { createMemoryBucketRegistry, createRedisBucketRegistry, type BucketRegistry } from "../../src/decisions/bucket-registry.js";
import { requireEnv } from "../support/database.js";

/** A new exposure, remembered for a day. */
const exposure = (): Exposure => ({ id: `rec:${randomUUID()}:1`, rememberSeconds: 86_400 });

/** A promise and its resolve, to hold a read until the test lets it land. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

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

    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [null, null]);
    await elsewhere(a, "t");
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [null, null], "younger than maxAge: served from memory");

    await counters.decisionCounter.countDecision(tenant, null, [b]);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [null, { successes: 0, trials: 1 }], "own impressions show at once");
    assert.equal(await counters.evidence.addSuccess(tenant, b, exposure()), true);
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [b]))[0], { successes: 1, trials: 1 });

    clock += 1000;
    // Stale: served once more while one refresh runs, then the refreshed values.
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), [null]);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [{ successes: 0, trials: 1 }, { successes: 1, trials: 1 }]);

    await counters.wipe.resetTenant(tenant);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [null, null], "a workspace reset empties the cache too");
  });

  /**
   * The real Redis counters, with each evidence read held after Redis answered until the test opens
   * its gate: a background refresh whose answer is still on its way while this process counts.
   */
  function heldReads() {
    const real = createRedisCounters(redis);
    const held: Array<{ answered: Promise<void>; land: () => void }> = [];
    const counters: Counters = {
      ...real,
      evidence: {
        ...real.evidence,
        async readEvidence(tenantId, keys) {
          const answered = gate();
          const landing = gate();
          held.push({ answered: answered.opened, land: landing.open });
          const values: Array<AdaptiveEvidence | null> = await real.evidence.readEvidence(tenantId, keys);
          answered.open();
          await landing.opened;
          return values;
        },
      },
    };
    return { counters, held };
  }

  /** A cache over held reads with one key read once and cached (empty); `age` moves its clock. */
  async function cachedOnce() {
    let clock = 1_000_000;
    const { counters: slow, held } = heldReads();
    const counters = withEvidenceCache(slow, { maxAgeMs: 1000, now: () => clock });
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    const first = counters.evidence.readEvidence(tenant, [key]);
    await held[0].answered;
    held[0].land();
    assert.deepEqual(await first, [null]);
    return { counters, held, tenant, key, age: (ms: number) => (clock += ms) };
  }

  test("a refresh read before this process's own counts does not erase them when it lands (no lost update)", async () => {
    const { counters, held, tenant, key, age } = await cachedOnce();
    age(1000);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [key]), [null], "stale: served once more while a refresh runs");
    await held[1].answered; // Redis has answered the refresh: nothing counted yet
    await counters.decisionCounter.countDecision(tenant, null, [key]);
    assert.equal(await counters.evidence.addSuccess(tenant, key, exposure()), true);
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 1, trials: 1 }, "own counts at once");
    held[1].land();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 1, trials: 1 }, "the older read did not erase them");

    age(1000);
    await counters.evidence.readEvidence(tenant, [key]);
    await held[2].answered;
    held[2].land();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 1, trials: 1 }, "a read sent after them has them once, not twice");
  });

  test("a count that waited to go with others is not lost to a read sent while it waited", async () => {
    const { counters, held, tenant, key, age } = await cachedOnce();
    age(1000);
    // Two counts leave at once, the third waits for one of them; the refresh read leaves before it.
    const counted = [1, 2, 3].map(() => counters.decisionCounter.countDecision(tenant, null, [key]));
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [key]), [null], "stale: served once more while a refresh runs");
    await held[1].answered;
    assert.deepEqual(await Promise.all(counted), [1, 2, 3]);
    held[1].land();
    await new Promise((r) => setImmediate(r));
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 0, trials: 3 }, "the read had two; the third is added back");
  });

  test("a read sent before a workspace reset does not bring the wiped evidence back", async () => {
    const { counters: slow, held } = heldReads();
    const counters = withEvidenceCache(slow, { maxAgeMs: 60_000 });
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    await counters.decisionCounter.countDecision(tenant, null, [key]);
    const reading = counters.evidence.readEvidence(tenant, [key]);
    await held[0].answered;
    await counters.wipe.resetTenant(tenant);
    held[0].land();
    await reading;
    const after = counters.evidence.readEvidence(tenant, [key]);
    assert.equal(held.length, 2, "nothing cached from before the reset: read again");
    held[1].land();
    assert.deepEqual(await after, [null]);
  });

  test("holds at most maxEntries: an evicted key is read from Redis again", async () => {
    const counters = withEvidenceCache(createRedisCounters(redis), { maxAgeMs: 60_000, maxEntries: 1 });
    const tenant = randomUUID();
    const [a, b] = [`${randomUUID()}|*`, `${randomUUID()}|*`];
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), [null]);
    await redis.hincrby(tenantKey(tenant, "ad:*"), `${a.split("|")[0]}:t`, 1);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), [null], "still cached");
    await counters.evidence.readEvidence(tenant, [b]);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [a]), [{ successes: 0, trials: 1 }], "evicted by b, read again");
  });

  test("maxAge 0 reads Redis every time", async () => {
    const counters = withEvidenceCache(createRedisCounters(redis), { maxAgeMs: 0 });
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [key]), [null]);
    await redis.hincrby(tenantKey(tenant, "ad:*"), `${key.split("|")[0]}:t`, 1);
    assert.deepEqual(await counters.evidence.readEvidence(tenant, [key]), [{ successes: 0, trials: 1 }]);
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
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [{ successes: 0, trials: 2 }, { successes: 0, trials: 1 }]);
      assert.equal(await counters.decisionCounter.countDecision(tenant, 2, [a, b]), null, "quota spent");
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [{ successes: 0, trials: 2 }, { successes: 0, trials: 1 }], "a refused count adds no trials");
      await counters.decisionCounter.uncountDecision(tenant, [b]);
      assert.equal(await counters.decisionCounter.decisions(tenant), 1);
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [{ successes: 0, trials: 2 }, { successes: 0, trials: 0 }]);
    });
  }

  for (const [name, make] of [
    ["Redis", () => createRedisCounters(redis)],
    ["in-memory (single-node default)", () => createMemoryCounters()],
  ] as Array<[string, () => Counters]>) {
    test(`${name}: one success per exposure, and never more successes than trials`, async () => {
      const counters = make();
      const tenant = randomUUID();
      const key = `${randomUUID()}|*`;
      const [shown, other] = [exposure(), exposure()];
      assert.equal(await counters.evidence.addSuccess(tenant, key, shown), false, "no trial yet: nothing to succeed");
      await counters.decisionCounter.countDecision(tenant, null, [key]);
      assert.equal(await counters.evidence.addSuccess(tenant, key, shown), true, "a click");
      assert.equal(await counters.evidence.addSuccess(tenant, key, shown), false, "then a conversion on the same exposure");
      assert.equal(await counters.evidence.addSuccess(tenant, key, other), false, "another exposure, but no trial left");
      await counters.decisionCounter.countDecision(tenant, null, [key]);
      assert.equal(await counters.evidence.addSuccess(tenant, key, other), true);
      assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 2, trials: 2 });
      await counters.wipe.resetTenant(tenant);
      await counters.decisionCounter.countDecision(tenant, null, [key]);
      assert.equal(await counters.evidence.addSuccess(tenant, key, shown), true, "a reset forgets the exposures with the evidence");
    });
  }

  test("Redis: concurrent decisions go together in few scripts, each counted once and never past the quota", async () => {
    const counters = createRedisCounters(redis);
    const scripted = redis as Redis & { countDecisions(...args: unknown[]): Promise<number[]> };
    const script = scripted.countDecisions.bind(redis);
    let scripts = 0;
    scripted.countDecisions = (...args) => (scripts++, script(...args));
    try {
      const tenant = randomUUID();
      const [a, b] = [`${randomUUID()}|*`, `${randomUUID()}|*`];
      const counts = await Promise.all(Array.from({ length: 60 }, (_, i) => counters.decisionCounter.countDecision(tenant, 50, i % 2 ? [a, b] : [a])));
      assert.deepEqual(counts.slice(0, 50), Array.from({ length: 50 }, (_, i) => i + 1), "counted in the order they were asked");
      assert.deepEqual(counts.slice(50), Array(10).fill(null), "past the quota: not counted");
      assert.ok(scripts <= 4, `60 decisions in ${scripts} scripts`);
      assert.equal(await counters.decisionCounter.decisions(tenant), 50);
      assert.deepEqual(await counters.evidence.readEvidence(tenant, [a, b]), [{ successes: 0, trials: 50 }, { successes: 0, trials: 25 }]);
    } finally {
      scripted.countDecisions = script;
    }
  });

  test("Redis: concurrent positive outcomes on one exposure count one success", async () => {
    const counters = createRedisCounters(redis);
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    for (let i = 0; i < 5; i++) await counters.decisionCounter.countDecision(tenant, null, [key]);
    const shown = exposure();
    const counted = await Promise.all(Array.from({ length: 20 }, () => counters.evidence.addSuccess(tenant, key, shown)));
    assert.equal(counted.filter(Boolean).length, 1);
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 1, trials: 5 });
    assert.ok((await redis.ttl(tenantKey(tenant, `ax:${shown.id}`))) > 86_000, "the exposure is remembered with its TTL");
  });

  test("under parallel requests the quota admits exactly its limit and trials match the decisions counted", async () => {
    const counters = createRedisCounters(redis);
    const tenant = randomUUID();
    const key = `${randomUUID()}|*`;
    const counts = await Promise.all(Array.from({ length: 40 }, () => counters.decisionCounter.countDecision(tenant, 25, [key])));
    assert.equal(counts.filter((c) => c !== null).length, 25);
    assert.deepEqual(new Set(counts.filter((c) => c !== null)), new Set(Array.from({ length: 25 }, (_, i) => i + 1)));
    assert.deepEqual((await counters.evidence.readEvidence(tenant, [key]))[0], { successes: 0, trials: 25 });
  });
});

describe("the registry of context buckets", () => {
  for (const [name, make] of [
    ["Redis", () => createRedisBucketRegistry(redis, 2)],
    ["in-memory (single-node default)", () => createMemoryBucketRegistry(2)],
  ] as Array<[string, () => BucketRegistry]>) {
    test(`${name}: a bucket space admits buckets up to its cap, and its own buckets after that`, async () => {
      const registry = make();
      const tenant = randomUUID();
      const [space, other] = ["space-1", "space-2"];
      assert.deepEqual(await registry.admit(tenant, [{ space, bucket: "b1" }, { space, bucket: "b2" }, { space, bucket: "b3" }]), [true, true, false]);
      assert.deepEqual(await registry.admit(tenant, [{ space, bucket: "b2" }, { space: other, bucket: "b3" }]), [true, true], "a known bucket, and another space's cap");
      assert.deepEqual(await registry.admit(randomUUID(), [{ space, bucket: "b3" }]), [true], "another tenant's space");
    });
  }
});

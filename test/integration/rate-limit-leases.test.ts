import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { createRedis, connectRedis, type Redis } from "../../src/platform/redis.js";
import { createRedisRateLimiter } from "../../src/platform/rate-limiter.js";
import { requireEnv } from "../support/database.js";

/** The shared window in real Redis, taken a lease at a time by limiters that stand for service processes. */
let redis: Redis;
let prefix: string;
before(async () => {
  prefix = `test:${randomBytes(6).toString("hex")}:`;
  redis = createRedis(requireEnv("TEST_REDIS_URL"), prefix);
  await connectRedis(redis);
});
after(() => redis.quit());

interface LimiterProcess {
  limiter: ReturnType<typeof createRedisRateLimiter>;
  scripts: () => number;
  close: () => Promise<void>;
}

/** A client of its own per limiter (a process has its own connection), counting the scripts it sends. */
async function startLimiter(leaseMs = 100): Promise<LimiterProcess> {
  const client = createRedis(requireEnv("TEST_REDIS_URL"), prefix);
  await connectRedis(client);
  let scripts = 0;
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
    if (command.name === "evalsha" || command.name === "eval") scripts++;
    return (send as (...a: unknown[]) => unknown)(command, ...rest);
  }) as typeof client.sendCommand;
  return { limiter: createRedisRateLimiter(client, { leaseMs }), scripts: () => scripts, close: async () => void (await client.quit()) };
}

/** Runs `use` with a limiter of its own and a fresh window key, closing the limiter after. */
async function withLimiter(leaseMs: number, use: (p: LimiterProcess, key: string) => Promise<void>): Promise<void> {
  const p = await startLimiter(leaseMs);
  try {
    await use(p, `rl:${randomUUID()}`);
  } finally {
    await p.close();
  }
}

describe("rate limit leases over Redis", () => {
  test("a small limit is counted hit by hit, exactly: remaining falls by one, the hit over the limit waits", () =>
    withLimiter(100, async (p, key) => {
      for (const remaining of [4, 3, 2, 1, 0]) {
        const d = await p.limiter.hit(key, 5, 60_000);
        assert.deepEqual([d.allowed, d.remaining], [true, remaining]);
      }
      const refused = await p.limiter.hit(key, 5, 60_000);
      assert.equal(refused.allowed, false);
      assert.ok(refused.retryAfterSeconds > 0 && refused.retryAfterSeconds <= 60);
      assert.equal(await redis.zcard(key), 5, "no slot held beyond the hits");
    }));

  test("under load a process takes slots ahead and spends them without a round trip each; remaining stays exact in one process", () =>
    withLimiter(60_000, async (p, key) => {
      let last = 0;
      for (let i = 0; i < 300; i++) last = (await p.limiter.hit(key, 1_000_000, 60_000)).remaining;
      assert.equal(last, 1_000_000 - 300);
      assert.ok(p.scripts() <= 12, `300 hits took ${p.scripts()} scripts`);
      assert.ok((await redis.zcard(key)) >= 300);
    }));

  test("slots a lease did not use go back with the next take once it expires", () =>
    withLimiter(30, async (p, key) => {
      for (let i = 0; i < 40; i++) await p.limiter.hit(key, 1_000_000, 60_000);
      const held = await redis.zcard(key);
      assert.ok(held > 40, `the last lease holds slots ahead (${held} for 40 hits)`);
      await new Promise((r) => setTimeout(r, 60));
      const next = await p.limiter.hit(key, 1_000_000, 60_000);
      // 41 hits; what the new lease holds ahead is counted in Redis and in nothing else.
      const count = await redis.zcard(key);
      assert.equal(next.remaining, 1_000_000 - 41);
      assert.ok(count >= 41 && count < held + 1, `after the give-back Redis holds ${count} slots (was ${held})`);
    }));

  test("after a pause a process takes one slot again: the demand it saw before is stale", () =>
    withLimiter(30, async (p, key) => {
      for (let i = 0; i < 40; i++) await p.limiter.hit(key, 1_000_000, 60_000);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await p.limiter.hit(key, 1_000_000, 60_000)).remaining, 1_000_000 - 41);
      assert.equal(await redis.zcard(key), 41, "the last lease's spare slots went back and none were taken ahead");
    }));

  test("processes racing on one window never admit more than its limit, and together admit all of it", async () => {
    const [a, b] = [await startLimiter(), await startLimiter()];
    try {
      const key = `rl:${randomUUID()}`;
      const limit = 500;
      const wave = (p: typeof a) => Promise.all(Array.from({ length: 50 }, () => p.limiter.hit(key, limit, 60_000)));
      let allowed = 0;
      for (let round = 0; round < 8; round++) {
        const results = (await Promise.all([wave(a), wave(b)])).flat();
        allowed += results.filter((d) => d.allowed).length;
      }
      // 800 hits at a limit of 500: every admitted hit holds a slot, and at the end no slot is left unspent.
      assert.equal(allowed, limit);
      assert.equal(await redis.zcard(key), limit);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  test("a cost is taken all or none, a lease's spare slots included", () =>
    withLimiter(100, async (p, key) => {
      assert.equal((await p.limiter.hit(key, 10, 60_000, 7)).remaining, 3);
      assert.equal((await p.limiter.hit(key, 10, 60_000, 4)).allowed, false);
      assert.equal((await p.limiter.hit(key, 10, 60_000, 3)).remaining, 0);
      assert.equal(await redis.zcard(key), 10);
    }));
});

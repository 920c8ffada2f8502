import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Worker } from "node:worker_threads";
import { createRedis, connectRedis, type Redis } from "../../src/platform/redis.js";
import { createRedisBus } from "../../src/platform/bus.js";
import type { Logger } from "../../src/platform/logger.js";
import { requireEnv } from "../support/database.js";

/** Cross-process notifications over real Redis: a confirmed publish returns only once every receiver has applied it. */
const redisUrl = requireEnv("TEST_REDIS_URL");
const prefix = `test:${randomBytes(6).toString("hex")}:`;
let redis: Redis;
before(async () => {
  redis = createRedis(redisUrl, prefix);
  await connectRedis(redis);
});
after(() => redis.quit());

function recordingLogger(warnings: string[]): Logger {
  const log = { warn: (_: unknown, msg: string) => warnings.push(msg), error: () => {}, info: () => {}, debug: () => {} };
  return log as unknown as Logger;
}

describe("redis bus", () => {
  test("a confirmed publish resolves only after a slow receiver on another event loop has run its handler", async () => {
    const applied = new Int32Array(new SharedArrayBuffer(4));
    // A plain worker thread does not apply `--import tsx` to its entry: register tsx, then load the .ts.
    const entry = new URL("../support/bus-receiver.ts", import.meta.url).href;
    const receiver = new Worker(`import("tsx/esm/api").then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`, {
      eval: true,
      workerData: { redisAt: redisUrl, prefix, channel: "slow", handlerMs: 300, applied },
    });
    const bus = await createRedisBus(redis, prefix, recordingLogger([]));
    try {
      await new Promise((resolve, reject) => receiver.once("message", resolve).once("error", reject));
      await bus.publish("slow", "first");
      assert.equal(Atomics.load(applied, 0), 0, "a plain publish does not wait for the receiver");
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(Atomics.load(applied, 0), 1);
      await bus.publish("slow", "second", { confirmed: true });
      assert.equal(Atomics.load(applied, 0), 2, "the receiver applied the message before publish returned");
    } finally {
      await bus.close();
      receiver.postMessage("stop");
      await new Promise((r) => receiver.once("exit", r));
    }
  });

  test("a receiver that never answers holds a confirmed publish only until the timeout, with a warning", async () => {
    const mute = redis.duplicate({ keyPrefix: "", enableOfflineQueue: true });
    await mute.subscribe(`${prefix}mute`);
    const warnings: string[] = [];
    const bus = await createRedisBus(redis, prefix, recordingLogger(warnings), 200);
    const received: string[] = [];
    await bus.subscribe("mute", (m) => received.push(m));
    try {
      const started = performance.now();
      await bus.publish("mute", "hel\u0001lo", { confirmed: true });
      const waited = performance.now() - started;
      assert.ok(waited >= 190 && waited < 1500, `waited ${waited} ms`);
      assert.ok(warnings.some((w) => w.includes("confirmation timed out")), "the silent receiver is reported");
      assert.deepEqual(received, ["hel\u0001lo", "hel\u0001lo"], "here at once and through Redis: the payload, not the envelope");
      warnings.length = 0;
      await mute.unsubscribe();
      const quick = performance.now();
      await bus.publish("mute", "again", { confirmed: true });
      assert.ok(performance.now() - quick < 150, "with every receiver answering there is no wait");
      assert.deepEqual(warnings, []);
    } finally {
      mute.disconnect();
      await bus.close();
    }
  });
});

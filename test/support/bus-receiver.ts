import { parentPort, workerData } from "node:worker_threads";
import { createRedis, connectRedis, type RedisTarget } from "../../src/platform/redis.js";
import { createRedisBus } from "../../src/platform/bus.js";
import { createLogger } from "../../src/platform/logger.js";

/**
 * Another process's bus, in a thread with its own event loop: its handler takes `handlerMs` of
 * blocked loop before it marks `applied[0]`, so a sender that does not wait for it would see 0.
 */
const { redisAt, prefix, channel, handlerMs, applied } = workerData as {
  /** A REDIS_URL, or a cluster's nodes. */
  redisAt: RedisTarget;
  prefix: string;
  channel: string;
  handlerMs: number;
  applied: Int32Array;
};
const redis = createRedis(redisAt, prefix);
await connectRedis(redis);
const bus = await createRedisBus(redis, prefix, createLogger("silent"));
await bus.subscribe(channel, () => {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, handlerMs);
  Atomics.add(applied, 0, 1);
});
parentPort!.postMessage("ready");
parentPort!.on("message", async () => {
  await bus.close();
  await redis.quit();
  parentPort!.close();
});

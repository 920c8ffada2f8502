import { EventEmitter } from "node:events";
import type { Redis } from "./redis.js";
import type { Logger } from "./logger.js";

/**
 * Cross-process notifications (cache invalidation). Redis pub/sub when Redis is configured;
 * an in-process emitter as the documented single-node default. A message may arrive more than once,
 * so handlers must be idempotent.
 */
export interface Bus {
  publish(channel: string, message: string): Promise<void>;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;
  close(): Promise<void>;
}

export function createLocalBus(): Bus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    async publish(channel, message) {
      emitter.emit(channel, message);
    },
    async subscribe(channel, handler) {
      emitter.on(channel, handler);
    },
    async close() {
      emitter.removeAllListeners();
    },
  };
}

/** Channels carry the deployment's key prefix, since ioredis does not prefix channel names. */
export async function createRedisBus(redis: Redis, prefix: string, logger: Logger): Promise<Bus> {
  const sub = redis.duplicate({ enableOfflineQueue: true, keyPrefix: "" });
  const handlers = new Map<string, Array<(message: string) => void>>();
  const deliver = (channel: string, message: string) => {
    for (const h of handlers.get(channel) ?? []) {
      try {
        h(message);
      } catch (err) {
        logger.error({ err, channel }, "bus handler failed");
      }
    }
  };
  sub.on("message", deliver);
  sub.on("error", (err) => logger.warn({ err: err.message }, "redis subscriber error"));
  return {
    /**
     * Delivered here first, so this process sees its own change at once even when Redis is down;
     * the change has already been committed, so a failed publish is logged, not thrown: other
     * processes then see it when their cached copy expires (at most 30 seconds for credentials).
     */
    async publish(channel, message) {
      deliver(prefix + channel, message);
      await redis.publish(prefix + channel, message).catch((err: Error) => {
        logger.warn({ err: err.message, channel }, "redis publish failed; other processes will see the change when their caches expire");
      });
    },
    async subscribe(channel, handler) {
      const full = prefix + channel;
      if (!handlers.has(full)) {
        handlers.set(full, []);
        await sub.subscribe(full);
      }
      handlers.get(full)!.push(handler);
    },
    async close() {
      sub.disconnect();
    },
  };
}

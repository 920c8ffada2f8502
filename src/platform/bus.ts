import { EventEmitter } from "node:events";
import { randomUUID } from "node:crypto";
import { duplicateForSubscribing, isCluster, type RedisClient } from "./redis.js";
import type { Logger } from "./logger.js";

/**
 * Cross-process notifications (cache invalidation). Redis pub/sub when Redis is configured;
 * an in-process emitter as the documented single-node default. A message may arrive more than once,
 * so handlers must be idempotent.
 */
export interface Bus {
  /**
   * With `confirmed`, resolves only once every subscribed process has run its handlers (or after a
   * timeout, {@link CONFIRM_TIMEOUT_MS} by default, for a process that hangs), so that a change that
   * must bite at once (a revocation) has reached every process before the caller answers. Resolves
   * with whether every process did confirm (false after the timeout, or when Redis refused the
   * message): a caller that must not answer otherwise (an erasure) says so; the others go on.
   */
  publish(channel: string, message: string, options?: { confirmed?: boolean }): Promise<boolean>;
  subscribe(channel: string, handler: (message: string) => void): Promise<void>;
  close(): Promise<void>;
}

export function createLocalBus(): Bus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  return {
    async publish(channel, message) {
      emitter.emit(channel, message);
      return true;
    },
    async subscribe(channel, handler) {
      emitter.on(channel, handler);
    },
    async close() {
      emitter.removeAllListeners();
    },
  };
}

/**
 * Publishes and says how many subscribers it reached. A single node's PUBLISH answers exactly that.
 * A cluster's PUBLISH counts only the clients of the node that took it, although the message
 * reaches every node's subscribers; so there the count is the channel's subscribers on every node,
 * taken just before publishing: a process that subscribes in between is not waited for (it loads
 * the new state anyway), one that leaves in between is waited for until the timeout.
 */
async function publishCounted(redis: RedisClient, channel: string, message: string): Promise<number> {
  if (!isCluster(redis)) return redis.publish(channel, message);
  const perNode = await Promise.all(redis.nodes("all").map((node) => node.pubsub("NUMSUB", channel) as Promise<[string, number]>));
  await redis.publish(channel, message);
  return perNode.reduce((sum, [, n]) => sum + Number(n), 0);
}

/** How long a confirmed publish waits for processes that received the message but do not answer. */
export const CONFIRM_TIMEOUT_MS = 2_000;

/** Separates the reply channel, the message number and the payload of a confirmed message. */
const CONFIRM_MARK = "\u0001";

interface PendingConfirm {
  received: number;
  /** Receivers counted by PUBLISH; Infinity until its reply, which may come after the first acks. */
  expected: number;
  done: () => void;
}

/**
 * Channels carry the deployment's key prefix, since ioredis does not prefix channel names.
 * A confirmed message travels as MARK replyChannel MARK number MARK payload; every receiver
 * publishes the number back on the sender's reply channel after running its handlers.
 *
 * On a Redis Cluster, PUBLISH (not the sharded SPUBLISH) reaches the subscribers of every node,
 * and each process's subscriber connection sits on one node chosen by ioredis.
 */
export async function createRedisBus(redis: RedisClient, prefix: string, logger: Logger, confirmTimeoutMs = CONFIRM_TIMEOUT_MS): Promise<Bus> {
  const sub = duplicateForSubscribing(redis);
  const handlers = new Map<string, Array<(message: string) => void>>();
  const replyChannel = `${prefix}bus.confirm.${randomUUID()}`;
  const pending = new Map<string, PendingConfirm>();
  let sequence = 0;
  const run = (channel: string, message: string) => {
    for (const h of handlers.get(channel) ?? []) {
      try {
        h(message);
      } catch (err) {
        logger.error({ err, channel }, "bus handler failed");
      }
    }
  };
  const settle = (confirm: PendingConfirm) => {
    if (confirm.received >= confirm.expected) confirm.done();
  };
  const deliver = (channel: string, message: string) => {
    if (channel === replyChannel) {
      const confirm = pending.get(message);
      if (confirm) {
        confirm.received++;
        settle(confirm);
      }
      return;
    }
    if (!message.startsWith(CONFIRM_MARK)) return run(channel, message);
    const idAt = message.indexOf(CONFIRM_MARK, 1) + 1;
    const payloadAt = message.indexOf(CONFIRM_MARK, idAt) + 1;
    run(channel, message.slice(payloadAt));
    redis.publish(message.slice(1, idAt - 1), message.slice(idAt, payloadAt - 1)).catch((err: Error) => logger.warn({ err: err.message, channel }, "bus confirmation failed"));
  };
  sub.on("message", deliver);
  sub.on("error", (err) => logger.warn({ err: err.message }, "redis subscriber error"));
  await sub.subscribe(replyChannel);
  const warnUnpublished = (err: Error, channel: string) =>
    logger.warn({ err: err.message, channel }, "redis publish failed; other processes will see the change when their caches expire");
  return {
    /**
     * Delivered here first, so this process sees its own change at once even when Redis is down;
     * the change has already been committed, so a failed publish is logged, not thrown: other
     * processes then see it when their cached copy expires (at most 30 seconds for credentials).
     */
    async publish(channel, message, options) {
      run(prefix + channel, message);
      if (!options?.confirmed) {
        return redis.publish(prefix + channel, message).then(
          () => true,
          (err: Error) => (warnUnpublished(err, channel), false),
        );
      }
      const id = String(++sequence);
      const confirm: PendingConfirm = { received: 0, expected: Infinity, done: () => {} };
      let all = true;
      const confirmed = new Promise<void>((resolve) => (confirm.done = resolve));
      pending.set(id, confirm);
      const timer = setTimeout(() => {
        logger.warn({ channel, received: confirm.received, expected: confirm.expected }, "bus confirmation timed out; a process that did not answer sees the change when its cache expires");
        all = false;
        confirm.done();
      }, confirmTimeoutMs);
      publishCounted(redis, prefix + channel, ["", replyChannel, id, message].join(CONFIRM_MARK)).then(
        (receivers) => {
          confirm.expected = receivers;
          settle(confirm);
        },
        (err: Error) => {
          warnUnpublished(err, channel);
          all = false;
          confirm.done();
        },
      );
      await confirmed;
      clearTimeout(timer);
      pending.delete(id);
      return all;
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

import { AppError } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { eventStreamKey, type RedisClient } from "../platform/redis.js";
import type { EventRecord } from "./event-store.js";

/** Publishes accepted events to the tenant's stream (spec 6): a sink for consumers, never read here. */
export interface EventStream {
  /** The entry id, or null when there is no Redis or publishing failed (never an error: spec 6). */
  publish(tenantId: string, event: EventRecord, receivedAt: Date): Promise<string | null>;
  /**
   * GDPR erasure: deletes the entries whose `customerId` is the customer's; how many. Unlike
   * publishing, a failure is an error (503): an erasure must not answer `verified` over a dead Redis.
   */
  forgetCustomer(tenantId: string, customerId: string): Promise<number>;
  /** How many of the customer's entries the stream still holds (the erasure's verification). */
  countCustomer(tenantId: string, customerId: string): Promise<number>;
}

/**
 * XADD ... MAXLEN ~ maxLen: Redis trims whole macro nodes, so the length stays near the cap at
 * the cost of a few extra entries, without trimming on every add. Entry fields: docs/events.md.
 */
export function createRedisEventStream(redis: RedisClient, maxLen: number, logger: Logger): EventStream {
  return {
    async publish(tenantId, event, receivedAt) {
      try {
        return await redis.xadd(
          eventStreamKey(tenantId),
          "MAXLEN",
          "~",
          maxLen,
          "*",
          "id", event.id,
          "tenantId", tenantId,
          "eventType", event.eventType,
          "customerId", event.customerId ?? "",
          "sessionId", event.sessionId ?? "",
          "timestamp", event.occurredAt.toISOString(),
          "receivedAt", receivedAt.toISOString(),
          "properties", JSON.stringify(event.properties),
        );
      } catch (err) {
        logger.warn({ err: (err as Error).message, tenantId, eventId: event.id }, "event not published to the stream");
        return null;
      }
    },
    async forgetCustomer(tenantId, customerId) {
      const ids = await customerEntries(redis, tenantId, customerId);
      let deleted = 0;
      for (let i = 0; i < ids.length; i += SCAN_BATCH) deleted += await orUnavailable(redis.xdel(eventStreamKey(tenantId), ...ids.slice(i, i + SCAN_BATCH)));
      return deleted;
    },
    async countCustomer(tenantId, customerId) {
      return (await customerEntries(redis, tenantId, customerId)).length;
    },
  };
}

/** Entries read per XRANGE (and deleted per XDEL) while looking for one customer's. */
const SCAN_BATCH = 1000;

/**
 * The ids of the customer's entries. The stream has no index by customer, so it is read whole, in
 * batches; it is capped (EVENT_STREAM_MAXLEN), so that is bounded. Each batch starts just after the
 * last id seen (sequence + 1 rather than `(id`, which needs Redis 6.2).
 */
async function customerEntries(redis: RedisClient, tenantId: string, customerId: string): Promise<string[]> {
  const ids: string[] = [];
  let start = "-";
  for (;;) {
    const batch = await orUnavailable(redis.xrange(eventStreamKey(tenantId), start, "+", "COUNT", SCAN_BATCH));
    for (const [id, fields] of batch) if (fieldValue(fields, "customerId") === customerId) ids.push(id);
    if (batch.length < SCAN_BATCH) return ids;
    const [ms, seq] = batch[batch.length - 1][0].split("-");
    start = `${ms}-${BigInt(seq) + 1n}`;
  }
}

function fieldValue(fields: string[], name: string): string | undefined {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

/** Redis's own text names hosts and ports: the caller gets a stable message, the log the cause. */
function orUnavailable<T>(op: Promise<T>): Promise<T> {
  return op.catch((err) => {
    throw new AppError({ code: "UNAVAILABLE", reason: "EVENT_STREAM_UNAVAILABLE", message: "The event stream is temporarily unavailable; try again shortly", cause: err });
  });
}

/** Without Redis there is no stream: every streamId is null (docs/events.md), and nothing to erase. */
export const NO_EVENT_STREAM: EventStream = { publish: async () => null, forgetCustomer: async () => 0, countCustomer: async () => 0 };

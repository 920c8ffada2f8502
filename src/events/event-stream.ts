import type { Logger } from "../platform/logger.js";
import { tenantKey, type RedisClient } from "../platform/redis.js";
import type { EventRecord } from "./event-store.js";

/** Publishes accepted events to the tenant's stream (spec 6): a sink for consumers, never read here. */
export interface EventStream {
  /** The entry id, or null when there is no Redis or publishing failed (never an error: spec 6). */
  publish(tenantId: string, event: EventRecord, receivedAt: Date): Promise<string | null>;
}

/**
 * The spec's `events:<tenantId>`, under the house key rule (tenant hash tag first, so one tenant's
 * keys share a Redis Cluster slot): `t:{<tenantId>}:events`, after the deployment's REDIS_KEY_PREFIX.
 */
export function eventStreamKey(tenantId: string): string {
  return tenantKey(tenantId, "events");
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
  };
}

/** Without Redis there is no stream: every streamId is null (docs/events.md). */
export const NO_EVENT_STREAM: EventStream = { publish: async () => null };

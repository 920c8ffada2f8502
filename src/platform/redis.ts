import { Redis } from "ioredis";

export type { Redis };

/**
 * A dead Redis must fail fast, not hang the request path: no offline queue, bounded command time,
 * one retry per request. ioredis keeps reconnecting in the background.
 *
 * No auto-pipelining: ioredis runs one auto-pipeline at a time per connection, so under load every
 * command waited for the previous batch's round trip, and the waiting requests' objects outlived
 * scavenges (docs/performance.md). Commands still share the connection without waiting for each other.
 */
export function createRedis(url: string, keyPrefix: string): Redis {
  return new Redis(url, {
    keyPrefix,
    enableOfflineQueue: false,
    commandTimeout: 1_000,
    connectTimeout: 2_000,
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}

/**
 * Connects and waits until ready, so start-up reports a wrong REDIS_URL at once (and stops the
 * client's background reconnects, which would otherwise keep the failed process alive).
 */
export async function connectRedis(redis: Redis): Promise<void> {
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    throw new Error(`Redis at REDIS_URL is unreachable: ${(err as Error).message}`, { cause: err });
  }
}

/** Redis Cluster hash tag for one tenant, so a tenant's multi-key scripts stay on one slot. */
export function tenantKey(tenantId: string, ...parts: string[]): string {
  return [`t:{${tenantId}}`, ...parts].join(":");
}

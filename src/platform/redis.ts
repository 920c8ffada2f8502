import { Cluster, Redis } from "ioredis";
import { StartupError } from "./startup-error.js";

export type { Redis, Cluster };

/** One address of REDIS_CLUSTER_NODES. */
export interface RedisNode {
  host: string;
  port: number;
}

/**
 * Either client: a single node (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). Everything
 * that uses Redis takes this, so both work wherever one does (docs/redis-cluster.md).
 */
export type RedisClient = Redis | Cluster;

/** Where Redis is: a REDIS_URL, or the REDIS_CLUSTER_NODES a Cluster client starts from. */
export type RedisTarget = string | readonly RedisNode[];

/** How the target is named in logs and errors: the variable that set it, never its credentials. */
export const redisTargetName = (target: RedisTarget) => (typeof target === "string" ? "REDIS_URL" : "REDIS_CLUSTER_NODES");

const COMMAND_TIMEOUT_MS = 1_000;
const CONNECT_TIMEOUT_MS = 2_000;
const reconnectDelay = (attempt: number) => Math.min(attempt * 200, 2_000);

/**
 * A dead Redis must fail fast, not hang the request path: no offline queue, bounded command time,
 * one retry per request. ioredis keeps reconnecting in the background.
 *
 * No auto-pipelining: ioredis runs one auto-pipeline at a time per connection, so under load every
 * command waited for the previous batch's round trip, and the waiting requests' objects outlived
 * scavenges (docs/performance.md). Commands still share the connection without waiting for each other.
 *
 * On a cluster the same rules hold per node connection; `keyPrefix` is applied by the Cluster
 * client, before the key's hash tag is computed, so a prefix must not contain braces (config.ts).
 */
export function createRedis(target: string, keyPrefix: string): Redis;
export function createRedis(target: RedisTarget, keyPrefix: string): RedisClient;
export function createRedis(target: RedisTarget, keyPrefix: string): RedisClient {
  if (typeof target === "string") {
    return new Redis(target, {
      keyPrefix,
      enableOfflineQueue: false,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: CONNECT_TIMEOUT_MS,
      maxRetriesPerRequest: 1,
      lazyConnect: true,
      retryStrategy: reconnectDelay,
    });
  }
  return new Cluster(
    target.map((n) => ({ ...n })),
    {
      keyPrefix,
      enableOfflineQueue: false,
      lazyConnect: true,
      clusterRetryStrategy: reconnectDelay,
      redisOptions: { commandTimeout: COMMAND_TIMEOUT_MS, connectTimeout: CONNECT_TIMEOUT_MS, maxRetriesPerRequest: 1 },
    },
  );
}

export function isCluster(redis: RedisClient): redis is Cluster {
  return redis instanceof Cluster;
}

/**
 * A second client to the same Redis for subscriptions (a subscribed connection can run nothing
 * else), with an offline queue so that subscriptions survive a reconnect, and no key prefix.
 */
export function duplicateForSubscribing(redis: RedisClient): RedisClient {
  const overrides = { enableOfflineQueue: true, keyPrefix: "" };
  return isCluster(redis) ? redis.duplicate(undefined, overrides) : redis.duplicate(overrides);
}

/**
 * The servers that hold keys: the one node, or every master of a cluster. A keyless command that
 * must see every key (SCAN) runs on each; a cluster would send it to one node at random.
 */
function keyHoldingNodes(redis: RedisClient): Redis[] {
  return isCluster(redis) ? redis.nodes("master") : [redis];
}

/** SCAN's glob characters, escaped: a customer id (or a key prefix) is any text. */
export const globEscaped = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

/**
 * Every key matching `pattern` (a SCAN glob, under the client's REDIS_KEY_PREFIX), in batches, on
 * every node that holds keys. Keys come back without the prefix, ready for the client's own
 * commands (which add it again and route them to the key's slot). A batch holds keys of several
 * slots unless the pattern fixes a hash tag, as a tenant's `t:{<tenantId>}:` does.
 */
export async function scanKeys(redis: RedisClient, pattern: string, onBatch: (keys: string[]) => Promise<void>): Promise<void> {
  const prefix = redis.options.keyPrefix ?? "";
  for (const node of keyHoldingNodes(redis)) {
    let cursor = "0";
    do {
      // A cluster's node connections carry no keyPrefix: MATCH sees and returns full keys there too.
      const [next, found] = await node.scan(cursor, "MATCH", globEscaped(prefix) + pattern, "COUNT", 500);
      cursor = next;
      if (found.length) await onBatch(found.map((k) => k.slice(prefix.length)));
    } while (cursor !== "0");
  }
}

/**
 * Connects and waits until ready, so start-up reports a wrong REDIS_URL or REDIS_CLUSTER_NODES at
 * once (and stops the client's background reconnects, which would otherwise keep the failed
 * process alive). A cluster is ready once it has its slot map.
 */
export async function connectRedis(redis: RedisClient): Promise<void> {
  try {
    await redis.connect();
  } catch (err) {
    redis.disconnect();
    const what = isCluster(redis) ? "Redis Cluster at REDIS_CLUSTER_NODES" : "Redis at REDIS_URL";
    throw new StartupError(`${what} is unreachable: ${(err as Error).message}`, { cause: err });
  }
}

/** Redis Cluster hash tag for one tenant, so a tenant's multi-key scripts stay on one slot. */
export function tenantKey(tenantId: string, ...parts: string[]): string {
  return [`t:{${tenantId}}`, ...parts].join(":");
}

/**
 * The tenant's event stream, named by the spec (6): `events:<tenantId>`, outside the tenant's hash
 * tag. It is one key that no script, transaction or multi-key command combines with another, so it
 * may hash to any slot of a cluster. A SCAN of `t:{<tenantId>}:*` does not find it: the tenant wipe
 * names it (`untaggedTenantKeys`).
 */
export function eventStreamKey(tenantId: string): string {
  return `events:${tenantId}`;
}

/** The tenant's keys outside `t:{<tenantId>}:`, each a single key the tenant wipe deletes by name. */
export function untaggedTenantKeys(tenantId: string): string[] {
  return [eventStreamKey(tenantId)];
}

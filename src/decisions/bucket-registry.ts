import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "./fail-closed.js";
import { deleteTenantKeys, type TenantCounterWipe } from "./tenant-counter-wipe.js";
import { entriesByTenant, savedList, unchanged, type SnapshotSource, type TenantChanged } from "./counter-snapshot.js";

/**
 * How many context buckets one bucket space (a `bucketBy` list, core's bucketSpace) of a tenant
 * may hold. A bucket is made of the caller's attribute values, so without a cap a caller could
 * mint Redis hashes without end; a thousand buckets of 200 offers is 400,000 evidence fields.
 */
export const MAX_BUCKETS_PER_SPACE = 1000;

/** A context bucket (core's contextBucket) in its bucket space. */
export interface SpacedBucket {
  space: string;
  bucket: string;
}

/**
 * The context buckets each of a tenant's bucket spaces has admitted. A bucket already there, or
 * one that still fits under the cap, is admitted and stays until the workspace reset; past the cap,
 * a new bucket is refused and its decisions count in the all-contexts bucket.
 */
export interface BucketRegistry {
  /** Admits each bucket (check and add are one step); per bucket, whether it was admitted. */
  admit(tenantId: string, buckets: readonly SpacedBucket[]): Promise<boolean[]>;
}

const spaceKey = (space: string) => `adb:${space}`;

/** KEYS: each bucket's space set. ARGV: the cap, then each bucket. Returns 1 (admitted) or 0 per bucket. */
const ADMIT = `
local cap = tonumber(ARGV[1])
local admitted = {}
for i = 1, #KEYS do
  local bucket = ARGV[i + 1]
  if redis.call('SISMEMBER', KEYS[i], bucket) == 1 then
    admitted[i] = 1
  elseif redis.call('SCARD', KEYS[i]) < cap then
    redis.call('SADD', KEYS[i], bucket)
    admitted[i] = 1
  else
    admitted[i] = 0
  end
end
return admitted
`;

type Scripted = RedisClient & { admitBuckets(numKeys: number, ...args: Array<string | number>): Promise<number[]> };

/** One set per space, `t:{<tenantId>}:adb:<space>`, beside the evidence hashes it bounds. */
export function createRedisBucketRegistry(redis: RedisClient, cap = MAX_BUCKETS_PER_SPACE): BucketRegistry {
  redis.defineCommand("admitBuckets", { lua: ADMIT });
  const r = redis as Scripted;
  return failClosed<BucketRegistry>({
    async admit(tenantId, buckets) {
      if (!buckets.length) return [];
      const keys = buckets.map(({ space }) => tenantKey(tenantId, spaceKey(space)));
      return (await r.admitBuckets(keys.length, ...keys, cap, ...buckets.map(({ bucket }) => bucket))).map((admitted) => admitted === 1);
    },
  });
}

/** A tenant's admitted buckets as saved: each space's key (after the tenant prefix) and its buckets. They do not expire. */
export interface BucketSnapshot {
  spaces: Array<[key: string, buckets: string[]]>;
}

/**
 * The single-node default: the same semantics in one process's memory. `changed` hears of every
 * tenant that admits a new bucket, for the next save (counter-persistence.ts).
 */
export function createMemoryBucketRegistry(cap = MAX_BUCKETS_PER_SPACE, changed: TenantChanged = unchanged): BucketRegistry & TenantCounterWipe & SnapshotSource {
  const spaces = new Map<string, Set<string>>();
  return {
    name: "buckets",
    async admit(tenantId, buckets) {
      return buckets.map(({ space, bucket }) => {
        const key = tenantKey(tenantId, spaceKey(space));
        let known = spaces.get(key);
        if (!known) spaces.set(key, (known = new Set()));
        if (known.has(bucket)) return true;
        if (known.size >= cap) return false;
        known.add(bucket);
        changed(tenantId);
        return true;
      });
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(spaces, tenantId);
      changed(tenantId);
    },
    dump(tenantIds) {
      const out = new Map<string, BucketSnapshot>();
      for (const [tenantId, entries] of entriesByTenant(spaces, tenantIds)) {
        const kept = entries.filter(([, known]) => known.size > 0).map(([key, known]): [string, string[]] => [key, [...known]]);
        if (kept.length) out.set(tenantId, { spaces: kept });
      }
      return out;
    },
    load(tenantId, state) {
      for (const [key, buckets] of savedList<BucketSnapshot["spaces"][number]>(state, "spaces")) spaces.set(tenantKey(tenantId, key), new Set(buckets));
    },
  };
}

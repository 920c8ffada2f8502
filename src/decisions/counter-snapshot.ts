import { tenantKey } from "../platform/redis.js";

/**
 * One in-memory counter store's part in surviving a restart (counter-persistence.ts): its state per
 * tenant as plain JSON, with expiry times as absolute epoch milliseconds, so that a window or a TTL
 * means the same after a restart and an entry that expired meanwhile is dropped when it is loaded.
 */
export interface SnapshotSource {
  /** The store's stable name: the `store` column of `counter_snapshots`. */
  readonly name: string;
  /** The live state of each of `tenantIds` that holds any; a tenant holding nothing is absent. */
  dump(tenantIds: ReadonlySet<string>): Map<string, unknown>;
  /** Adds a tenant's saved state (as `dump` gave it), dropping entries that have expired. */
  load(tenantId: string, state: unknown): void;
}

/** Called by an in-memory store whenever it changes a tenant's state: what the next save writes. */
export type TenantChanged = (tenantId: string) => void;

export const unchanged: TenantChanged = () => {};

/** The tenant of a key written by `tenantKey` (`t:{<tenantId>}:…`); tenant ids are uuids, without braces. */
export function tenantOfKey(key: string): string {
  return key.slice(3, key.indexOf("}"));
}

/** A key without its `t:{<tenantId>}:` prefix: what a snapshot stores, since the row names the tenant. */
export function keySuffix(tenantId: string, key: string): string {
  return key.slice(tenantKey(tenantId, "").length);
}

/**
 * The entries of `map` (keyed by `tenantKey`) that belong to `tenantIds`, grouped by tenant and
 * keyed by suffix: one pass over the map, whatever the number of tenants.
 */
export function entriesByTenant<V>(map: ReadonlyMap<string, V>, tenantIds: ReadonlySet<string>): Map<string, Array<[string, V]>> {
  const out = new Map<string, Array<[string, V]>>();
  for (const [key, value] of map) {
    const tenantId = tenantOfKey(key);
    if (!tenantIds.has(tenantId)) continue;
    let entries = out.get(tenantId);
    if (!entries) out.set(tenantId, (entries = []));
    entries.push([keySuffix(tenantId, key), value]);
  }
  return out;
}

/**
 * The list `field` of a saved state, checked before a store loads anything from it: a row that is
 * not in the store's form is refused whole (counter-persistence.ts logs it and goes on).
 */
export function savedList<T>(state: unknown, field: string): T[] {
  const list = (state as Record<string, unknown> | null)?.[field];
  if (!Array.isArray(list) || !list.every(Array.isArray)) throw new Error(`the saved state has no list of entries named ${field}`);
  return list as T[];
}

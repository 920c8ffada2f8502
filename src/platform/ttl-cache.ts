import { setNewest } from "../core/bounded-map.js";
/**
 * A bounded time-to-live cache for lookups on the request path. Concurrent misses for one key share
 * a single load; failed loads are not cached, so a caller that fails closed retries next time.
 *
 * `delete` also disowns a load in flight for the key: that load may have read the row before the
 * change that caused the delete (a revocation), so it still answers the callers already waiting on
 * it but is not stored, and the next caller starts a fresh load.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();
  private readonly inflight = new Map<string, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** The value cached for `key` while it is fresh, without a promise: the request path's hits need no turn of the microtask queue. */
  peek(key: string): V | undefined {
    return this.fresh(key)?.value;
  }

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.fresh(key);
    if (hit) return hit.value;
    const pending = this.inflight.get(key);
    if (pending) return pending;
    const p: Promise<V> = load()
      .then((value) => {
        // Still this key's load, i.e. no delete since it started: its value may be kept.
        if (this.inflight.get(key) === p) setNewest(this.entries, key, { value, expiresAt: this.now() + this.ttlMs }, this.maxEntries);
        return value;
      })
      .finally(() => {
        if (this.inflight.get(key) === p) this.inflight.delete(key);
      });
    this.inflight.set(key, p);
    return p;
  }

  private fresh(key: string): { value: V } | undefined {
    const hit = this.entries.get(key);
    return hit && hit.expiresAt > this.now() ? hit : undefined;
  }

  delete(key: string): void {
    this.entries.delete(key);
    this.inflight.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.inflight.clear();
  }
}

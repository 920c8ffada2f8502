import { setNewest } from "../core/bounded-map.js";
import type { Bus } from "./bus.js";

/**
 * Per-key values rebuilt on demand and dropped when any process announces a change on the bus, so
 * the Recommend path reads configuration from memory and never queries per request. The process
 * that made a change drops its copy at once (read-your-writes); the others within a pub/sub hop.
 * A load in flight when its key is invalidated, here or through the bus, finishes for the callers
 * already waiting on it, but is neither kept nor joined by later callers: the entry is the load itself.
 */
export class InvalidatedCache<V> {
  private readonly entries = new Map<string, Promise<V>>();

  constructor(
    private readonly bus: Bus,
    private readonly channel: string,
    private readonly load: (key: string) => Promise<V>,
    private readonly maxEntries = 10_000,
  ) {}

  /** Subscribes to invalidations; call once before serving. */
  async listen(): Promise<void> {
    await this.bus.subscribe(this.channel, (key) => this.entries.delete(key));
    await this.bus.subscribe(`${this.channel}.many`, (keys) => {
      for (const key of JSON.parse(keys) as string[]) this.entries.delete(key);
    });
  }

  get(key: string): Promise<V> {
    const hit = this.entries.get(key);
    if (hit) return hit;
    const loading = this.load(key);
    setNewest(this.entries, key, loading, this.maxEntries);
    loading.catch(() => {
      if (this.entries.get(key) === loading) this.entries.delete(key);
    });
    return loading;
  }

  /**
   * Drops here, and only here, every key `match` accepts: for a change that reaches every process
   * by a message of its own, such as a workspace reset, which drops all of a tenant's keys.
   */
  forgetWhere(match: (key: string) => boolean): void {
    for (const key of [...this.entries.keys()]) if (match(key)) this.entries.delete(key);
  }

  /** Drops the key here now and in every other process through the bus. */
  async invalidate(key: string): Promise<void> {
    this.entries.delete(key);
    await this.bus.publish(this.channel, key);
  }

  /** Drops many keys here and everywhere with one message: a bulk change publishes once, not per key. */
  async invalidateMany(keys: readonly string[]): Promise<void> {
    if (!keys.length) return;
    for (const key of keys) this.entries.delete(key);
    await this.bus.publish(`${this.channel}.many`, JSON.stringify(keys));
  }
}

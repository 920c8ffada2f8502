import type { Logger } from "../platform/logger.js";
import type { CounterSnapshotStore } from "./counter-snapshot-store.js";
import { createMemoryCounters, type Counters } from "./counters.js";

/**
 * How often the in-memory counters are saved when something changed: what a crash of the single
 * node can lose at most (docs/scaling.md). Fifteen seconds keeps that to a handful of decisions per
 * customer while a save of an idle service costs nothing and a busy one's costs one write per
 * changed tenant every fifteen seconds.
 */
export const COUNTER_SAVE_INTERVAL_MS = 15_000;

/** Loads the in-memory counters at start-up and saves them while the service runs, and at its stop. */
export interface CounterPersistence {
  /**
   * Loads every tenant's saved counters (entries that expired meanwhile are dropped) and starts
   * saving every interval. Call before the service answers. Until then, saving does nothing: a
   * process that never serves (the CLI) must not overwrite what the server saved.
   */
  start(): Promise<void>;
  /** Saves every tenant whose counters changed since the last save, after any save under way. */
  save(): Promise<void>;
  /** Stops the periodic save and saves one last time: after the service drained, before the database closes. */
  stop(): Promise<void>;
}

export interface PersistentCountersOptions {
  store: Pick<CounterSnapshotStore, "loadAcrossTenants" | "replace">;
  logger: Logger;
  intervalMs?: number;
  now?: () => number;
}

/**
 * The single-node default's counters (createMemoryCounters), which survive a restart: reservations,
 * evidence, buckets, negative outcomes, decision counts and variant assignments are saved per tenant
 * to `counter_snapshots` every `intervalMs` when they changed, and on a graceful stop, and loaded
 * at the next start. Saving runs off the request path, from a timer: a decision only marks its
 * tenant as changed. A workspace reset or a customer's erasure saves before it returns, so that
 * what it wiped cannot come back from an older save after a restart (the erasure's other counter
 * steps, evidence and assignments, run before its customer wipe, so that save covers them too).
 */
export function createPersistentMemoryCounters(o: PersistentCountersOptions): { counters: Counters; persistence: CounterPersistence } {
  const intervalMs = o.intervalMs ?? COUNTER_SAVE_INTERVAL_MS;
  const changed = new Set<string>();
  const memory = createMemoryCounters(o.now, (tenantId) => changed.add(tenantId));
  let started = false;
  let timer: NodeJS.Timeout | null = null;
  /** The save under way (or the last one, settled): saves run one after another, never together. */
  let latest: Promise<void> = Promise.resolve();

  const saveChanged = async () => {
    if (!started || !changed.size) return;
    const tenants = new Set(changed);
    changed.clear();
    // Taken at once, before the first await: a tenant's rows are its counters at one moment.
    const dumps = memory.snapshots.map((source) => ({ name: source.name, states: source.dump(tenants) }));
    const failed: string[] = [];
    let firstError: unknown = null;
    for (const tenantId of tenants) {
      const states = new Map<string, unknown>();
      for (const { name, states: byTenant } of dumps) if (byTenant.has(tenantId)) states.set(name, byTenant.get(tenantId));
      try {
        await o.store.replace(tenantId, states);
      } catch (err) {
        failed.push(tenantId);
        firstError ??= err;
      }
    }
    // Saved again next time, from what memory then holds.
    for (const tenantId of failed) changed.add(tenantId);
    if (failed.length) throw firstError;
  };
  const save = () => {
    const run = latest.then(saveChanged);
    latest = run.catch(() => undefined);
    return run;
  };
  const tick = () => {
    save().catch((err) => o.logger.warn({ err }, "saving the in-memory counters failed; the next save retries"));
  };

  const persistence: CounterPersistence = {
    async start() {
      if (started) return;
      let loaded = 0;
      const tenants = new Set<string>();
      for (const row of await o.store.loadAcrossTenants()) {
        const source = memory.snapshots.find((s) => s.name === row.store);
        try {
          if (!source) throw new Error(`no in-memory store is named ${row.store}`);
          source.load(row.tenantId, row.state);
          loaded++;
          tenants.add(row.tenantId);
        } catch (err) {
          o.logger.warn({ err, tenantId: row.tenantId, store: row.store }, "a saved counter state could not be loaded; that store starts empty for the tenant");
        }
      }
      o.logger.info({ stores: loaded, tenants: tenants.size, saveIntervalMs: intervalMs }, "in-memory counters loaded from counter_snapshots");
      started = true;
      timer = setInterval(tick, intervalMs);
      timer.unref();
    },
    save,
    async stop() {
      if (timer) clearInterval(timer);
      timer = null;
      // The stop goes on: what the failed save held is lost, as after a crash.
      await save().catch((err) => o.logger.error({ err }, "the last save of the in-memory counters failed; their changes since the previous save are lost"));
      started = false;
    },
  };

  const counters: Counters = {
    ...memory,
    wipe: {
      async resetTenant(tenantId) {
        await memory.wipe.resetTenant(tenantId);
        await save();
      },
    },
    customerWipe: {
      async forgetCustomer(tenantId, customerId) {
        const deleted = await memory.customerWipe.forgetCustomer(tenantId, customerId);
        await save();
        return deleted;
      },
    },
  };
  return { counters, persistence };
}

import type { Counters } from "./counters.js";
import type { AdaptiveEvidence } from "./evidence-store.js";

export interface EvidenceCacheOptions {
  /** Evidence younger than this is served without asking Redis; older evidence is refreshed. */
  maxAgeMs: number;
  /** Entries kept per process; the oldest go first. */
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  /** null: nothing counted yet. */
  value: AdaptiveEvidence | null;
  readAt: number;
}

/** A count this process made, numbered in the order its write went to Redis. */
interface Bump {
  sent: number;
  field: keyof AdaptiveEvidence;
  by: number;
}

/**
 * Adaptive evidence, read through a per-process cache. Reading the evidence of 200 candidates is
 * one HMGET of 400 fields per decision, which cost a fifth of a decision's CPU; a posterior over
 * hundreds of trials does not move measurably within a second. So evidence is served from memory
 * while it is younger than `maxAgeMs`; stale evidence is served once more while one refresh runs in
 * the background, and only evidence never read waits for Redis. This process's own impressions and
 * successes are applied to the cache at once, so a process always sees its own learning; other
 * processes' learning arrives within `maxAgeMs` (docs/decisioning.md, "Adaptive model").
 *
 * A read that was sent before one of this process's own writes does not contain it, so when it
 * lands it must not replace the count that write added to memory (a lost update until the next
 * refresh). Writes and reads are numbered as they are sent, on the one connection that carries
 * both in order (on a Redis Cluster, the connection to the tenant's slot's master), and a read's
 * values get the process's later counts added back.
 *
 * Caps and budgets are not cached: they are reserved atomically in Redis on every decision.
 */
export function withEvidenceCache(counters: Counters, options: EvidenceCacheOptions): Counters {
  if (options.maxAgeMs <= 0) return counters;
  const { evidence, decisionCounter, wipe } = counters;
  const now = options.now ?? Date.now;
  const maxEntries = options.maxEntries ?? 200_000;
  /** By tenant, then by evidence key: no per-lookup key strings on the hot path. */
  const tenants = new Map<string, Map<string, Entry>>();
  let size = 0;
  const refreshing = new Map<string, Set<string>>();
  /** Reads and writes sent so far: a read numbered n contains the writes numbered up to n. */
  let sent = 0;
  /** By tenant, then key: the counts made while a read of the key is out, and how many reads are out. */
  const loading = new Map<string, Map<string, { reads: number; bumps: Bump[] }>>();
  const ofTenant = <T>(map: Map<string, T>, tenantId: string, create: () => T): T => {
    let value = map.get(tenantId);
    if (!value) map.set(tenantId, (value = create()));
    return value;
  };

  /** Bumped by a workspace reset: a read sent before it must not store the wiped evidence after it. */
  const resets = new Map<string, number>();

  const load = async (tenantId: string, keys: string[]): Promise<void> => {
    const readAt = now();
    const reset = resets.get(tenantId);
    const reads = ofTenant(loading, tenantId, () => new Map());
    const outs = keys.map((key) => {
      let out = reads.get(key);
      if (!out) reads.set(key, (out = { reads: 0, bumps: [] }));
      out.reads++;
      return out;
    });
    const readNumber = ++sent;
    let values: Array<AdaptiveEvidence | null>;
    try {
      values = await evidence.readEvidence(tenantId, keys);
    } finally {
      keys.forEach((key, i) => --outs[i].reads === 0 && reads.delete(key));
      if (reads.size === 0 && loading.get(tenantId) === reads) loading.delete(tenantId);
    }
    if (resets.get(tenantId) !== reset) return;
    const entries = ofTenant(tenants, tenantId, () => new Map<string, Entry>());
    keys.forEach((key, i) => {
      let value = values[i];
      // This process's counts sent after the read are not in it; memory had them, so add them back.
      for (const change of outs[i].bumps) if (change.sent > readNumber) value = bumped(value, change);
      if (entries.delete(key)) size--; // re-inserted last: Map order is the eviction order
      entries.set(key, { value, readAt });
      size++;
    });
    for (const [id, other] of tenants) {
      for (const key of other.keys()) {
        if (size <= maxEntries) return;
        other.delete(key);
        size--;
      }
      if (other.size === 0) tenants.delete(id);
    }
  };

  /** Applies a count this process made (its write numbered `sent`) to memory, and to any read of the key still out. */
  const bump = (tenantId: string, key: string, change: Bump) => {
    loading.get(tenantId)?.get(key)?.bumps.push(change);
    const entry = tenants.get(tenantId)?.get(key);
    if (entry) entry.value = bumped(entry.value, change);
  };

  return {
    ...counters,
    evidence: {
      async readEvidence(tenantId, keys) {
        const entries = tenants.get(tenantId);
        const inFlight = ofTenant(refreshing, tenantId, () => new Set<string>());
        const missing: string[] = [];
        const stale: string[] = [];
        const t = now();
        // Indexed, not for-of: this async function's loop over 200 keys was left unoptimized, and
        // allocated an iterator result per key (8 KB a decision).
        const out = new Array<AdaptiveEvidence | null>(keys.length);
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          const entry = entries?.get(key);
          out[i] = entry ? entry.value : null;
          if (!entry) missing.push(key);
          else if (t - entry.readAt >= options.maxAgeMs && !inFlight.has(key)) stale.push(key);
        }
        if (stale.length) {
          for (const key of stale) inFlight.add(key);
          // A failed refresh leaves the stale values; the next decision tries again.
          void load(tenantId, stale)
            .catch(() => undefined)
            .finally(() => stale.forEach((key) => inFlight.delete(key)));
        }
        if (!missing.length) return out;
        // Read again after the wait: this process may have counted meanwhile.
        await load(tenantId, missing);
        const loaded = tenants.get(tenantId);
        return keys.map((key) => loaded?.get(key)?.value ?? null);
      },
      async addSuccess(tenantId, key, exposure) {
        const number = ++sent;
        const counted = await evidence.addSuccess(tenantId, key, exposure);
        if (counted) bump(tenantId, key, { sent: number, field: "successes", by: 1 });
        return counted;
      },
      countedExposures: (tenantId, exposureIds) => evidence.countedExposures(tenantId, exposureIds),
      /** This process's cache follows at once; other processes' within maxAgeMs, like any other count. */
      async takeBack(tenantId, counts, exposureIds) {
        const number = ++sent;
        const taken = await evidence.takeBack(tenantId, counts, exposureIds);
        for (const { key, trials, successes } of taken) {
          if (trials) bump(tenantId, key, { sent: number, field: "trials", by: -trials });
          if (successes) bump(tenantId, key, { sent: number, field: "successes", by: -successes });
        }
        return taken;
      },
    },
    decisionCounter: {
      ...decisionCounter,
      async countDecision(tenantId, quota, trialKeys) {
        // Numbered when it leaves, not now: counts may wait to go together, and a read sent
        // meanwhile does not contain this one.
        let number = 0;
        const count = await decisionCounter.countDecision(tenantId, quota, trialKeys, () => (number = ++sent));
        if (count !== null) for (const key of trialKeys) bump(tenantId, key, { sent: number, field: "trials", by: 1 });
        return count;
      },
      async uncountDecision(tenantId, trialKeys) {
        const number = ++sent;
        await decisionCounter.uncountDecision(tenantId, trialKeys);
        for (const key of trialKeys) bump(tenantId, key, { sent: number, field: "trials", by: -1 });
      },
    },
    wipe: {
      async resetTenant(tenantId) {
        await wipe.resetTenant(tenantId);
        resets.set(tenantId, (resets.get(tenantId) ?? 0) + 1);
        size -= tenants.get(tenantId)?.size ?? 0;
        tenants.delete(tenantId);
      },
    },
  };
}

function bumped(value: AdaptiveEvidence | null, { field, by }: Bump): AdaptiveEvidence {
  const base = value ?? { successes: 0, trials: 0 };
  return { ...base, [field]: base[field] + by };
}

import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "./fail-closed.js";
import { deleteTenantKeys, type TenantCounterWipe } from "./tenant-counter-wipe.js";
import { entriesByTenant, savedList, unchanged, type SnapshotSource, type TenantChanged } from "./counter-snapshot.js";

/** Beta-Bernoulli evidence of one offer in one context bucket. */
export interface AdaptiveEvidence {
  successes: number;
  trials: number;
}

/** The exposure a success is counted for: one per exposure, remembered for `rememberSeconds`. */
export interface Exposure {
  /** Names the exposure within the tenant (outcome-learning.ts says which). */
  id: string;
  /** At least as long as an outcome can still be attributed to the exposure (the lookback). */
  rememberSeconds: number;
}

/**
 * Adaptive evidence: what Recommend reads to score and Respond adds successes to. Trials are not
 * counted here: an impression is one more trial only together with its decision, so the decision
 * counter counts them (decision-counter.ts). Keys are the core's `<offerId>|<bucket>`.
 */
export interface EvidenceStore {
  /** The evidence of each key, in the keys' order, null where nothing was counted: a new array, the caller's to change. */
  readEvidence(tenantId: string, keys: readonly string[]): Promise<Array<AdaptiveEvidence | null>>;
  /**
   * One more success (a positive outcome) for the key, unless the exposure already has one or the
   * key's successes have caught up with its trials: a Beta-Bernoulli trial succeeds at most once,
   * however many positive outcomes (a click, then a conversion) follow it. The check and the
   * increment are one step. Returns whether the success was counted.
   */
  addSuccess(tenantId: string, key: string, exposure: Exposure): Promise<boolean>;
  /** GDPR erasure: which of the exposures had their success counted (their markers are still kept). */
  countedExposures(tenantId: string, exposureIds: readonly string[]): Promise<Set<string>>;
  /**
   * GDPR erasure: takes trials and successes back from their keys, never below zero and never
   * leaving more successes than trials, and forgets the exposures' markers. Returns what was taken.
   */
  takeBack(tenantId: string, counts: readonly EvidenceCount[], exposureIds: readonly string[]): Promise<EvidenceCount[]>;
}

/** Trials and successes of one evidence key: what a customer's decisions added, or what was taken back. */
export interface EvidenceCount extends AdaptiveEvidence {
  key: string;
}

/** Trials and successes left after taking `by` back from `from`: never negative, successes within trials. */
export function takenBack(from: AdaptiveEvidence, by: AdaptiveEvidence): AdaptiveEvidence {
  const trials = Math.max(0, from.trials - by.trials);
  const successes = Math.max(0, Math.min(from.successes - by.successes, trials));
  return { trials: from.trials - trials, successes: from.successes - successes };
}

/** Where one key's evidence lives in Redis: the bucket's hash and the offer's two fields in it. */
export interface EvidenceSlot {
  hash: string;
  successField: string;
  trialField: string;
}

/**
 * Evidence lives in one hash per context bucket (`ad:<bucket>`), two fields per offer
 * (`<offerId>:s`, `<offerId>:t`), so a decision reads all its candidates' evidence with one HMGET
 * instead of one command per offer. `key` is the core's `<offerId>|<bucket>`.
 */
export function evidenceSlot(key: string): EvidenceSlot {
  const at = key.indexOf("|");
  const offerId = key.slice(0, at);
  return { hash: `ad:${key.slice(at + 1)}`, successField: `${offerId}:s`, trialField: `${offerId}:t` };
}

/** Where an exposure that has had its success is remembered (a key of its own, expiring with the lookback). */
const exposureMarker = (exposure: Pick<Exposure, "id">) => `ax:${exposure.id}`;

/**
 * KEYS: the bucket's evidence hash, the exposure's marker. ARGV: the success field, the trial
 * field, the marker's TTL in seconds. Returns 1 when the success was counted, else 0.
 */
const ADD_SUCCESS = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local successes = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local trials = tonumber(redis.call('HGET', KEYS[1], ARGV[2]) or '0')
if successes >= trials then return 0 end
redis.call('SET', KEYS[2], '1', 'EX', ARGV[3])
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
return 1
`;

/**
 * KEYS: the bucket's evidence hash. ARGV: the success field, the trial field, the successes and
 * trials to take back. Returns {successes taken, trials taken}; takenBack's rule, in one step.
 */
const TAKE_BACK = `
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then return {0, 0} end
local s = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local t = tonumber(redis.call('HGET', KEYS[1], ARGV[2]))
local newT = math.max(0, t - tonumber(ARGV[4]))
local newS = math.max(0, math.min(s - tonumber(ARGV[3]), newT))
redis.call('HSET', KEYS[1], ARGV[1], newS, ARGV[2], newT)
return {s - newS, t - newT}
`;

type Scripted = RedisClient & {
  addSuccess(numKeys: number, ...args: Array<string | number>): Promise<number>;
  takeBackEvidence(numKeys: number, ...args: Array<string | number>): Promise<[number, number]>;
};

export function createRedisEvidenceStore(redis: RedisClient): EvidenceStore {
  redis.defineCommand("addSuccess", { lua: ADD_SUCCESS });
  redis.defineCommand("takeBackEvidence", { lua: TAKE_BACK });
  const r = redis as Scripted;
  return failClosed<EvidenceStore>({
    async readEvidence(tenantId, keys) {
      const byHash = new Map<string, Array<{ at: number; slot: EvidenceSlot }>>();
      keys.forEach((key, at) => {
        const slot = evidenceSlot(key);
        const group = byHash.get(slot.hash) ?? [];
        group.push({ at, slot });
        byHash.set(slot.hash, group);
      });
      const out: Array<AdaptiveEvidence | null> = new Array(keys.length).fill(null);
      await Promise.all(
        [...byHash].map(async ([hash, group]) => {
          const values = await redis.hmget(tenantKey(tenantId, hash), ...group.flatMap((g) => [g.slot.successField, g.slot.trialField]));
          group.forEach(({ at }, i) => {
            const [s, t] = [values[2 * i], values[2 * i + 1]];
            if (t !== null) out[at] = { successes: Number(s ?? 0), trials: Number(t) };
          });
        }),
      );
      return out;
    },
    async addSuccess(tenantId, key, exposure) {
      const { hash, successField, trialField } = evidenceSlot(key);
      const counted = await r.addSuccess(2, tenantKey(tenantId, hash), tenantKey(tenantId, exposureMarker(exposure)), successField, trialField, exposure.rememberSeconds);
      return counted === 1;
    },
    async countedExposures(tenantId, exposureIds) {
      if (!exposureIds.length) return new Set();
      const found = await redis.mget(...exposureIds.map((id) => tenantKey(tenantId, exposureMarker({ id }))));
      return new Set(exposureIds.filter((_, i) => found[i] !== null));
    },
    async takeBack(tenantId, counts, exposureIds) {
      const taken: EvidenceCount[] = [];
      for (const count of counts) {
        const { hash, successField, trialField } = evidenceSlot(count.key);
        const [successes, trials] = await r.takeBackEvidence(1, tenantKey(tenantId, hash), successField, trialField, count.successes, count.trials);
        taken.push({ key: count.key, successes, trials });
      }
      if (exposureIds.length) await redis.del(...exposureIds.map((id) => tenantKey(tenantId, exposureMarker({ id }))));
      return taken;
    },
  });
}

/** The in-memory evidence, with the trial count the in-memory decision counter keeps in step. */
export interface MemoryEvidenceStore extends EvidenceStore, TenantCounterWipe, SnapshotSource {
  addTrials(tenantId: string, keys: readonly string[], by: number): void;
}

/**
 * A tenant's evidence as saved: each key's successes and trials, and each exposure marker (its key
 * after the tenant prefix) with its expiry in epoch ms.
 */
export interface EvidenceSnapshot {
  evidence: Array<[key: string, successes: number, trials: number]>;
  markers: Array<[key: string, expiresAt: number]>;
}

/**
 * The single-node default: the same semantics in one process's memory. `changed` hears of every
 * tenant whose evidence changes, for the next save (counter-persistence.ts).
 */
export function createMemoryEvidenceStore(now: () => number = Date.now, changed: TenantChanged = unchanged): MemoryEvidenceStore {
  const evidence = new Map<string, AdaptiveEvidence>();
  /**
   * Exposures that had their success, to when they are forgotten; in insertion order, which is
   * expiry order for one TTL (not after a load, so a marker counts only while it is unexpired).
   */
  const markers = new Map<string, number>();
  const marked = (marker: string) => (markers.get(marker) ?? 0) > now();
  const add = (tenantId: string, key: string, field: keyof AdaptiveEvidence, by: number) => {
    const full = tenantKey(tenantId, key);
    const e = evidence.get(full) ?? { successes: 0, trials: 0 };
    evidence.set(full, { ...e, [field]: e[field] + by });
    changed(tenantId);
  };
  const forgetExpired = () => {
    for (const [marker, expiresAt] of markers) {
      if (expiresAt > now()) return;
      markers.delete(marker);
    }
  };
  return {
    name: "evidence",
    async readEvidence(tenantId, keys) {
      return keys.map((k) => {
        const e = evidence.get(tenantKey(tenantId, k));
        return e ? { ...e } : null;
      });
    },
    async addSuccess(tenantId, key, exposure) {
      forgetExpired();
      const marker = tenantKey(tenantId, exposureMarker(exposure));
      const e = evidence.get(tenantKey(tenantId, key)) ?? { successes: 0, trials: 0 };
      if (marked(marker) || e.successes >= e.trials) return false;
      markers.delete(marker);
      markers.set(marker, now() + exposure.rememberSeconds * 1000);
      add(tenantId, key, "successes", 1);
      return true;
    },
    async countedExposures(tenantId, exposureIds) {
      forgetExpired();
      return new Set(exposureIds.filter((id) => marked(tenantKey(tenantId, exposureMarker({ id })))));
    },
    async takeBack(tenantId, counts, exposureIds) {
      const taken = counts.map((count) => {
        const full = tenantKey(tenantId, count.key);
        const e = evidence.get(full);
        if (!e) return { key: count.key, successes: 0, trials: 0 };
        const back = takenBack(e, count);
        evidence.set(full, { successes: e.successes - back.successes, trials: e.trials - back.trials });
        return { key: count.key, ...back };
      });
      for (const id of exposureIds) markers.delete(tenantKey(tenantId, exposureMarker({ id })));
      changed(tenantId);
      return taken;
    },
    addTrials(tenantId, keys, by) {
      for (const key of keys) add(tenantId, key, "trials", by);
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(evidence, tenantId);
      deleteTenantKeys(markers, tenantId);
      changed(tenantId);
    },
    dump(tenantIds) {
      const out = new Map<string, EvidenceSnapshot>();
      const snapshot = (tenantId: string) => {
        let s = out.get(tenantId);
        if (!s) out.set(tenantId, (s = { evidence: [], markers: [] }));
        return s;
      };
      for (const [tenantId, entries] of entriesByTenant(evidence, tenantIds)) {
        snapshot(tenantId).evidence = entries.map(([key, e]) => [key, e.successes, e.trials]);
      }
      for (const [tenantId, entries] of entriesByTenant(markers, tenantIds)) {
        const live = entries.filter(([, expiresAt]) => expiresAt > now());
        if (live.length) snapshot(tenantId).markers = live;
      }
      return out;
    },
    load(tenantId, state) {
      const saved = savedList<EvidenceSnapshot["evidence"][number]>(state, "evidence");
      const savedMarkers = savedList<EvidenceSnapshot["markers"][number]>(state, "markers");
      for (const [key, successes, trials] of saved) evidence.set(tenantKey(tenantId, key), { successes, trials });
      for (const [key, expiresAt] of savedMarkers) if (expiresAt > now()) markers.set(tenantKey(tenantId, key), expiresAt);
    },
  };
}

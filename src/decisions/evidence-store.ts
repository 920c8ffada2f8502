import type { Redis } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "./fail-closed.js";
import { deleteTenantKeys, type TenantCounterWipe } from "./tenant-counter-wipe.js";

/** Beta-Bernoulli evidence of one offer in one context bucket. */
export interface AdaptiveEvidence {
  successes: number;
  trials: number;
}

/**
 * Adaptive evidence: what Recommend reads to score and Respond adds successes to. Trials are not
 * counted here: an impression is one more trial only together with its decision, so the decision
 * counter counts them (decision-counter.ts). Keys are the core's `<offerId>|<bucket>`.
 */
export interface EvidenceStore {
  readEvidence(tenantId: string, keys: readonly string[]): Promise<Record<string, AdaptiveEvidence>>;
  /** One more success (a positive outcome) for the key. */
  addSuccess(tenantId: string, key: string): Promise<void>;
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

export function createRedisEvidenceStore(redis: Redis): EvidenceStore {
  return failClosed<EvidenceStore>({
    async readEvidence(tenantId, keys) {
      const byHash = new Map<string, Array<{ key: string; slot: EvidenceSlot }>>();
      for (const key of keys) {
        const slot = evidenceSlot(key);
        const group = byHash.get(slot.hash) ?? [];
        group.push({ key, slot });
        byHash.set(slot.hash, group);
      }
      const out: Record<string, AdaptiveEvidence> = {};
      await Promise.all(
        [...byHash].map(async ([hash, group]) => {
          const values = await redis.hmget(tenantKey(tenantId, hash), ...group.flatMap((g) => [g.slot.successField, g.slot.trialField]));
          group.forEach(({ key: k }, i) => {
            const [s, t] = [values[2 * i], values[2 * i + 1]];
            if (t !== null) out[k] = { successes: Number(s ?? 0), trials: Number(t) };
          });
        }),
      );
      return out;
    },
    async addSuccess(tenantId, key) {
      const { hash, successField } = evidenceSlot(key);
      await redis.hincrby(tenantKey(tenantId, hash), successField, 1);
    },
  });
}

/** The in-memory evidence, with the trial count the in-memory decision counter keeps in step. */
export interface MemoryEvidenceStore extends EvidenceStore, TenantCounterWipe {
  addTrials(tenantId: string, keys: readonly string[], by: number): void;
}

/** The single-node default: the same semantics in one process's memory. */
export function createMemoryEvidenceStore(): MemoryEvidenceStore {
  const evidence = new Map<string, AdaptiveEvidence>();
  const add = (full: string, field: keyof AdaptiveEvidence, by: number) => {
    const e = evidence.get(full) ?? { successes: 0, trials: 0 };
    evidence.set(full, { ...e, [field]: e[field] + by });
  };
  return {
    async readEvidence(tenantId, keys) {
      return Object.fromEntries(keys.flatMap((k) => {
        const e = evidence.get(tenantKey(tenantId, k));
        return e ? [[k, { ...e }]] : [];
      }));
    },
    async addSuccess(tenantId, key) {
      add(tenantKey(tenantId, key), "successes", 1);
    },
    addTrials(tenantId, keys, by) {
      for (const key of keys) add(tenantKey(tenantId, key), "trials", by);
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(evidence, tenantId);
    },
  };
}

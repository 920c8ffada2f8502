import { KeyedGroupCommit } from "../platform/group-commit.js";
import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { evidenceSlot, type MemoryEvidenceStore } from "./evidence-store.js";
import { failClosed } from "./fail-closed.js";
import type { TenantCounterWipe } from "./tenant-counter-wipe.js";
import { unchanged, type SnapshotSource, type TenantChanged } from "./counter-snapshot.js";

/**
 * The workspace's lifetime decision count, which the quota limits. Each decision's impressions are
 * one more trial of their adaptive evidence, counted in the same step: a refused or taken-back
 * decision must leave the evidence untouched, so count and trials move together atomically.
 */
export interface DecisionCounter {
  /**
   * Counts one decision unless `quota` is spent and, when it counts, one more trial (an impression)
   * for each of `trialKeys`, atomically and in one round trip. Returns the new count, or null when
   * the quota was spent (and nothing was counted). `sent` is called when the count leaves for the
   * store, which may be after the call returns (counts wait to go together): a cache numbering its
   * writes by the order they reach the store (evidence-cache.ts) numbers it then.
   */
  countDecision(tenantId: string, quota: number | null, trialKeys: readonly string[], sent?: () => void): Promise<number | null>;
  /** Takes back what `countDecision` counted, when the decision could not be stored. */
  uncountDecision(tenantId: string, trialKeys: readonly string[]): Promise<void>;
  decisions(tenantId: string): Promise<number>;
}

/**
 * Counts a batch of decisions in order. KEYS: the decision counter, then each decision's trial
 * hashes, decision after decision. ARGV: the number of decisions, then for each its quota (-1 for
 * none), its number of trials and their fields. Returns each decision's new count, or -1 where the
 * quota was spent (nothing of that decision counted).
 */
const COUNT_DECISIONS = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local counted = 0
local out = {}
local a, k = 2, 2
for d = 1, tonumber(ARGV[1]) do
  local quota, trials = tonumber(ARGV[a]), tonumber(ARGV[a + 1])
  a = a + 2
  if quota >= 0 and current >= quota then
    out[d] = -1
  else
    for i = 0, trials - 1 do redis.call('HINCRBY', KEYS[k + i], ARGV[a + i], 1) end
    current = current + 1
    counted = counted + 1
    out[d] = current
  end
  a, k = a + trials, k + trials
end
if counted > 0 then redis.call('INCRBY', KEYS[1], counted) end
return out
`;

const DECISIONS = "decisions";

type Scripted = RedisClient & { countDecisions(numKeys: number, ...args: Array<string | number>): Promise<number[]> };

interface DecisionCount {
  quota: number | null;
  trialKeys: readonly string[];
  sent?: () => void;
}

/**
 * Counts in Redis; the trials land in the evidence hashes laid out by evidence-store.ts. While a
 * tenant's count is on its way, the decisions that arrive wait and go together in one script: one
 * round trip and one socket write for the batch (a Recommend's only Redis write, and on this
 * machine's loopback a write that wakes Redis costs more than the script). An idle service sends
 * each at once. A failed batch fails each of its decisions and is not retried: a script whose
 * answer was lost may have counted.
 */
export function createRedisDecisionCounter(redis: RedisClient): DecisionCounter {
  redis.defineCommand("countDecisions", { lua: COUNT_DECISIONS });
  const r = redis as Scripted;
  const countBatch = (tenantId: string, batch: DecisionCount[]): Promise<number[]> => {
    const keys = [tenantKey(tenantId, DECISIONS)];
    const args: Array<string | number> = [batch.length];
    for (const { quota, trialKeys } of batch) {
      args.push(quota ?? -1, trialKeys.length);
      for (const { hash, trialField } of trialKeys.map(evidenceSlot)) {
        keys.push(tenantKey(tenantId, hash));
        args.push(trialField);
      }
    }
    for (const count of batch) count.sent?.();
    return r.countDecisions(keys.length, ...keys, ...args);
  };
  /** By tenant: a batch is one tenant's (its keys share the tenant's hash slot on a Redis Cluster). */
  const batches = new KeyedGroupCommit<DecisionCount, number>(countBatch, { maxInFlight: 2 });
  return failClosed<DecisionCounter>({
    async countDecision(tenantId, quota, trialKeys, sent) {
      const n = await batches.submit(tenantId, { quota, trialKeys, sent });
      return n < 0 ? null : n;
    },
    async uncountDecision(tenantId, trialKeys) {
      const pipeline = redis.pipeline().decr(tenantKey(tenantId, DECISIONS));
      for (const { hash, trialField } of trialKeys.map(evidenceSlot)) pipeline.hincrby(tenantKey(tenantId, hash), trialField, -1);
      await pipeline.exec();
    },
    async decisions(tenantId) {
      return Number((await redis.get(tenantKey(tenantId, DECISIONS))) ?? 0);
    },
  });
}

/** A tenant's decision count as saved (the evidence store saves the trials). It does not expire. */
export interface DecisionCountSnapshot {
  decisions: number;
}

/**
 * The single-node default: one process's memory, its trials in the in-memory evidence store.
 * `changed` hears of every tenant whose count changes, for the next save (counter-persistence.ts).
 */
export function createMemoryDecisionCounter(evidence: MemoryEvidenceStore, changed: TenantChanged = unchanged): DecisionCounter & TenantCounterWipe & SnapshotSource {
  const counts = new Map<string, number>();
  return {
    name: "decisions",
    async countDecision(tenantId, quota, trialKeys, sent) {
      sent?.();
      const current = counts.get(tenantId) ?? 0;
      if (quota !== null && current >= quota) return null;
      evidence.addTrials(tenantId, trialKeys, 1);
      counts.set(tenantId, current + 1);
      changed(tenantId);
      return current + 1;
    },
    async uncountDecision(tenantId, trialKeys) {
      evidence.addTrials(tenantId, trialKeys, -1);
      counts.set(tenantId, (counts.get(tenantId) ?? 0) - 1);
      changed(tenantId);
    },
    async decisions(tenantId) {
      return counts.get(tenantId) ?? 0;
    },
    async resetTenant(tenantId) {
      counts.delete(tenantId);
      changed(tenantId);
    },
    dump(tenantIds) {
      const out = new Map<string, DecisionCountSnapshot>();
      for (const tenantId of tenantIds) {
        const decisions = counts.get(tenantId);
        if (decisions) out.set(tenantId, { decisions });
      }
      return out;
    },
    load(tenantId, state) {
      const { decisions } = state as DecisionCountSnapshot;
      if (!Number.isSafeInteger(decisions)) throw new Error("the saved state has no decision count");
      counts.set(tenantId, decisions);
    },
  };
}

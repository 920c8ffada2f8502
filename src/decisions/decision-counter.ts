import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { evidenceSlot, type MemoryEvidenceStore } from "./evidence-store.js";
import { failClosed } from "./fail-closed.js";
import type { TenantCounterWipe } from "./tenant-counter-wipe.js";

/**
 * The workspace's lifetime decision count, which the quota limits. Each decision's impressions are
 * one more trial of their adaptive evidence, counted in the same step: a refused or taken-back
 * decision must leave the evidence untouched, so count and trials move together atomically.
 */
export interface DecisionCounter {
  /**
   * Counts one decision unless `quota` is spent and, when it counts, one more trial (an impression)
   * for each of `trialKeys`, atomically and in one round trip. Returns the new count, or null when
   * the quota was spent (and nothing was counted).
   */
  countDecision(tenantId: string, quota: number | null, trialKeys: readonly string[]): Promise<number | null>;
  /** Takes back what `countDecision` counted, when the decision could not be stored. */
  uncountDecision(tenantId: string, trialKeys: readonly string[]): Promise<void>;
  decisions(tenantId: string): Promise<number>;
}

/** KEYS: the decision counter, then each trial's evidence hash. ARGV: the quota (-1 for none), then each trial's field. */
const COUNT_DECISION = `
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local quota = tonumber(ARGV[1])
if quota >= 0 and current >= quota then return -1 end
for i = 2, #KEYS do redis.call('HINCRBY', KEYS[i], ARGV[i], 1) end
return redis.call('INCR', KEYS[1])
`;

const DECISIONS = "decisions";

type Scripted = RedisClient & { countDecision(numKeys: number, ...args: Array<string | number>): Promise<number> };

/** Counts in Redis; the trials land in the evidence hashes laid out by evidence-store.ts. */
export function createRedisDecisionCounter(redis: RedisClient): DecisionCounter {
  redis.defineCommand("countDecision", { lua: COUNT_DECISION });
  const r = redis as Scripted;
  return failClosed<DecisionCounter>({
    async countDecision(tenantId, quota, trialKeys) {
      const trials = trialKeys.map(evidenceSlot);
      const n = await r.countDecision(
        1 + trials.length,
        tenantKey(tenantId, DECISIONS),
        ...trials.map(({ hash }) => tenantKey(tenantId, hash)),
        quota ?? -1,
        ...trials.map(({ trialField }) => trialField),
      );
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

/** The single-node default: one process's memory, its trials in the in-memory evidence store. */
export function createMemoryDecisionCounter(evidence: MemoryEvidenceStore): DecisionCounter & TenantCounterWipe {
  const counts = new Map<string, number>();
  return {
    async countDecision(tenantId, quota, trialKeys) {
      const current = counts.get(tenantId) ?? 0;
      if (quota !== null && current >= quota) return null;
      evidence.addTrials(tenantId, trialKeys, 1);
      counts.set(tenantId, current + 1);
      return current + 1;
    },
    async uncountDecision(tenantId, trialKeys) {
      evidence.addTrials(tenantId, trialKeys, -1);
      counts.set(tenantId, (counts.get(tenantId) ?? 0) - 1);
    },
    async decisions(tenantId) {
      return counts.get(tenantId) ?? 0;
    },
    async resetTenant(tenantId) {
      counts.delete(tenantId);
    },
  };
}

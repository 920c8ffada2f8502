import type { Redis } from "../platform/redis.js";
import { createMemoryBucketRegistry, createRedisBucketRegistry, type BucketRegistry } from "./bucket-registry.js";
import { createMemoryDecisionCounter, createRedisDecisionCounter, type DecisionCounter } from "./decision-counter.js";
import { createMemoryEvidenceStore, createRedisEvidenceStore, type EvidenceStore } from "./evidence-store.js";
import { createMemoryNegativeOutcomeStore, createRedisNegativeOutcomeStore, type NegativeOutcomeStore } from "./negative-outcome-store.js";
import { createMemoryReservationStore, createRedisReservationStore, type ReservationStore } from "./reservation-store.js";
import { createMemoryTenantCounterWipe, createRedisTenantCounterWipe, type TenantCounterWipe } from "./tenant-counter-wipe.js";

/**
 * The decisioning counters, built together because they share one keyspace (`t:{<tenantId>}:` in
 * Redis) and one wipe; each service is handed only the ones it uses.
 */
export interface Counters {
  reservations: ReservationStore;
  evidence: EvidenceStore;
  buckets: BucketRegistry;
  negatives: NegativeOutcomeStore;
  decisionCounter: DecisionCounter;
  wipe: TenantCounterWipe;
}

export function createRedisCounters(redis: Redis): Counters {
  return {
    reservations: createRedisReservationStore(redis),
    evidence: createRedisEvidenceStore(redis),
    buckets: createRedisBucketRegistry(redis),
    negatives: createRedisNegativeOutcomeStore(redis),
    decisionCounter: createRedisDecisionCounter(redis),
    wipe: createRedisTenantCounterWipe(redis),
  };
}

/** The single-node default: every counter in this process's memory. */
export function createMemoryCounters(now: () => number = Date.now): Counters {
  const reservations = createMemoryReservationStore(now);
  const evidence = createMemoryEvidenceStore(now);
  const negatives = createMemoryNegativeOutcomeStore();
  const buckets = createMemoryBucketRegistry();
  const decisionCounter = createMemoryDecisionCounter(evidence);
  return {
    reservations,
    evidence,
    buckets,
    negatives,
    decisionCounter,
    wipe: createMemoryTenantCounterWipe([reservations, evidence, buckets, negatives, decisionCounter]),
  };
}

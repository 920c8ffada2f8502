import type { RedisClient } from "../platform/redis.js";
import { createMemoryBucketRegistry, createRedisBucketRegistry, type BucketRegistry } from "./bucket-registry.js";
import { createMemoryDecisionCounter, createRedisDecisionCounter, type DecisionCounter } from "./decision-counter.js";
import { createMemoryEvidenceStore, createRedisEvidenceStore, type EvidenceStore } from "./evidence-store.js";
import { createMemoryNegativeOutcomeStore, createRedisNegativeOutcomeStore, type NegativeOutcomeStore } from "./negative-outcome-store.js";
import { createMemoryReservationStore, createRedisReservationStore, type ReservationStore } from "./reservation-store.js";
import {
  createMemoryCustomerCounterWipe,
  createMemoryTenantCounterWipe,
  createRedisCustomerCounterWipe,
  createRedisTenantCounterWipe,
  type CustomerCounterWipe,
  type TenantCounterWipe,
} from "./tenant-counter-wipe.js";
import { createMemoryVariantAssignments, createRedisVariantAssignments, type VariantAssignments } from "../experiments/variant-assignments.js";

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
  /** Experiments' kept variants (30 days), which Recommend reads and sets. */
  assignments: VariantAssignments;
  wipe: TenantCounterWipe;
  /** GDPR erasure of one customer's counters. */
  customerWipe: CustomerCounterWipe;
}

export function createRedisCounters(redis: RedisClient): Counters {
  return {
    reservations: createRedisReservationStore(redis),
    evidence: createRedisEvidenceStore(redis),
    buckets: createRedisBucketRegistry(redis),
    negatives: createRedisNegativeOutcomeStore(redis),
    decisionCounter: createRedisDecisionCounter(redis),
    assignments: createRedisVariantAssignments(redis),
    wipe: createRedisTenantCounterWipe(redis),
    customerWipe: createRedisCustomerCounterWipe(redis),
  };
}

/** The single-node default: every counter in this process's memory. */
export function createMemoryCounters(now: () => number = Date.now): Counters {
  const reservations = createMemoryReservationStore(now);
  const evidence = createMemoryEvidenceStore(now);
  const negatives = createMemoryNegativeOutcomeStore();
  const buckets = createMemoryBucketRegistry();
  const decisionCounter = createMemoryDecisionCounter(evidence);
  const assignments = createMemoryVariantAssignments(now);
  return {
    reservations,
    evidence,
    buckets,
    negatives,
    decisionCounter,
    assignments,
    wipe: createMemoryTenantCounterWipe([reservations, evidence, buckets, negatives, decisionCounter, assignments]),
    customerWipe: createMemoryCustomerCounterWipe([reservations, negatives]),
  };
}

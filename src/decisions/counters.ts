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
import { unchanged, type SnapshotSource, type TenantChanged } from "./counter-snapshot.js";
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

/** The in-memory counters, with what each store would save to survive a restart. */
export interface MemoryCounters extends Counters {
  /** Every store that holds state, each saved under its own name (counter-persistence.ts). */
  snapshots: SnapshotSource[];
}

/**
 * The single-node default: every counter in this process's memory. `changed` hears of every tenant
 * whose counters change, for the next save (counter-persistence.ts).
 */
export function createMemoryCounters(now: () => number = Date.now, changed: TenantChanged = unchanged): MemoryCounters {
  const reservations = createMemoryReservationStore(now, changed);
  const evidence = createMemoryEvidenceStore(now, changed);
  const negatives = createMemoryNegativeOutcomeStore(now, changed);
  const buckets = createMemoryBucketRegistry(undefined, changed);
  const decisionCounter = createMemoryDecisionCounter(evidence, changed);
  const assignments = createMemoryVariantAssignments(now, changed);
  return {
    reservations,
    evidence,
    buckets,
    negatives,
    decisionCounter,
    assignments,
    wipe: createMemoryTenantCounterWipe([reservations, evidence, buckets, negatives, decisionCounter, assignments]),
    customerWipe: createMemoryCustomerCounterWipe([reservations, negatives]),
    snapshots: [reservations, evidence, buckets, negatives, decisionCounter, assignments],
  };
}

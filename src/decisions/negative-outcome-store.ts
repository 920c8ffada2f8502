import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "./fail-closed.js";
import { deleteTenantKeys, type CustomerCounterWipe, type TenantCounterWipe } from "./tenant-counter-wipe.js";

/** A negative outcome a suppression policy may rest an offer for (the core's RecentOutcome). */
export interface NegativeOutcome {
  offerId: string;
  outcome: string;
  at: string;
}

/** How long a customer's latest negative outcome per offer is kept for suppression policies. */
export const NEGATIVE_OUTCOME_TTL_SECONDS = 90 * 86_400;

/** Each customer's latest negative outcome per offer: Respond records them, Recommend's suppression reads them. */
export interface NegativeOutcomeStore {
  /** Keeps the customer's latest negative outcome per offer. */
  record(tenantId: string, customerId: string, outcome: NegativeOutcome): Promise<void>;
  forCustomer(tenantId: string, customerId: string): Promise<NegativeOutcome[]>;
}

export const negativesKey = (customerId: string) => `neg:${encodeURIComponent(customerId)}`;

export function createRedisNegativeOutcomeStore(redis: RedisClient): NegativeOutcomeStore {
  return failClosed<NegativeOutcomeStore>({
    async record(tenantId, customerId, outcome) {
      const key = tenantKey(tenantId, negativesKey(customerId));
      await redis.multi().hset(key, outcome.offerId, JSON.stringify(outcome)).expire(key, NEGATIVE_OUTCOME_TTL_SECONDS).exec();
    },
    async forCustomer(tenantId, customerId) {
      const all = await redis.hgetall(tenantKey(tenantId, negativesKey(customerId)));
      return Object.values(all).map((v) => JSON.parse(v) as NegativeOutcome);
    },
  });
}

/** The single-node default: the same semantics in one process's memory, without expiry. */
export function createMemoryNegativeOutcomeStore(): NegativeOutcomeStore & TenantCounterWipe & CustomerCounterWipe {
  const negativeOutcomes = new Map<string, Record<string, NegativeOutcome>>();
  return {
    async record(tenantId, customerId, outcome) {
      const key = tenantKey(tenantId, negativesKey(customerId));
      negativeOutcomes.set(key, { ...negativeOutcomes.get(key), [outcome.offerId]: outcome });
    },
    async forCustomer(tenantId, customerId) {
      return Object.values(negativeOutcomes.get(tenantKey(tenantId, negativesKey(customerId))) ?? {});
    },
    async forgetCustomer(tenantId, customerId) {
      return negativeOutcomes.delete(tenantKey(tenantId, negativesKey(customerId))) ? 1 : 0;
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(negativeOutcomes, tenantId);
    },
  };
}

import type { RedisClient } from "../platform/redis.js";
import { tenantKey } from "../platform/redis.js";
import { failClosed } from "../decisions/fail-closed.js";
import { deleteTenantKeys, type TenantCounterWipe } from "../decisions/tenant-counter-wipe.js";
import { entriesByTenant, savedList, unchanged, type SnapshotSource, type TenantChanged } from "../decisions/counter-snapshot.js";

/** Spec 8: a customer keeps a variant for 30 days, even when the split changes meanwhile. */
export const ASSIGNMENT_TTL_SECONDS = 30 * 86_400;

/**
 * The variant each customer got in each experiment, kept for ASSIGNMENT_TTL_SECONDS from the first
 * assignment (reading it does not extend it).
 */
export interface VariantAssignments {
  /**
   * The customer's kept variant when it is still one of `variants`; otherwise keeps and returns
   * `assigned` (the hash's answer under the current split). Check and keep are one step, so two
   * concurrent first decisions agree.
   */
  keep(tenantId: string, experimentId: string, customerId: string, assigned: string, variants: readonly string[]): Promise<string>;
  /** The customer's kept variant, if any, without keeping anything: what a dry-run decision reads. */
  peek(tenantId: string, experimentId: string, customerId: string): Promise<string | null>;
  /** GDPR erasure: drops the customer's kept variants in `experimentIds`; returns how many existed. */
  forget(tenantId: string, customerId: string, experimentIds: readonly string[]): Promise<number>;
  /** How many of the customer's kept variants in `experimentIds` exist: erasure's verification. */
  count(tenantId: string, customerId: string, experimentIds: readonly string[]): Promise<number>;
}

const assignmentKey = (experimentId: string, customerId: string) => `exp:${experimentId}:${encodeURIComponent(customerId)}`;

/** KEYS[1]: the assignment. ARGV: the assigned variant, the TTL, then the variants that still exist. */
const KEEP = `
local kept = redis.call('GET', KEYS[1])
if kept then
  for i = 3, #ARGV do
    if ARGV[i] == kept then return kept end
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return ARGV[1]
`;

type Scripted = RedisClient & { keepVariant(numKeys: number, ...args: Array<string | number>): Promise<string> };

/** `t:{<tenantId>}:exp:<experimentId>:<customerId>`, so the workspace reset's wipe takes them too. */
export function createRedisVariantAssignments(redis: RedisClient): VariantAssignments {
  redis.defineCommand("keepVariant", { lua: KEEP });
  const r = redis as Scripted;
  return failClosed<VariantAssignments>({
    keep: (tenantId, experimentId, customerId, assigned, variants) =>
      r.keepVariant(1, tenantKey(tenantId, assignmentKey(experimentId, customerId)), assigned, ASSIGNMENT_TTL_SECONDS, ...variants),
    peek: (tenantId, experimentId, customerId) => redis.get(tenantKey(tenantId, assignmentKey(experimentId, customerId))),
    forget: async (tenantId, customerId, experimentIds) =>
      experimentIds.length ? redis.del(...experimentIds.map((id) => tenantKey(tenantId, assignmentKey(id, customerId)))) : 0,
    count: async (tenantId, customerId, experimentIds) =>
      experimentIds.length ? redis.exists(...experimentIds.map((id) => tenantKey(tenantId, assignmentKey(id, customerId)))) : 0,
  });
}

/** A tenant's kept variants as saved: each assignment's key (after the tenant prefix), its variant and its expiry in epoch ms. */
export interface AssignmentSnapshot {
  assignments: Array<[key: string, variant: string, expiresAt: number]>;
}

/**
 * The single-node default: the same semantics in this process's memory. `changed` hears of every
 * tenant whose assignments change, for the next save (decisions/counter-persistence.ts).
 */
export function createMemoryVariantAssignments(now: () => number = Date.now, changed: TenantChanged = unchanged): VariantAssignments & TenantCounterWipe & SnapshotSource {
  const kept = new Map<string, { variant: string; expiresAt: number }>();
  return {
    name: "assignments",
    async keep(tenantId, experimentId, customerId, assigned, variants) {
      const key = tenantKey(tenantId, assignmentKey(experimentId, customerId));
      const found = kept.get(key);
      if (found && found.expiresAt > now() && variants.includes(found.variant)) return found.variant;
      kept.set(key, { variant: assigned, expiresAt: now() + ASSIGNMENT_TTL_SECONDS * 1000 });
      changed(tenantId);
      return assigned;
    },
    async peek(tenantId, experimentId, customerId) {
      const found = kept.get(tenantKey(tenantId, assignmentKey(experimentId, customerId)));
      return found && found.expiresAt > now() ? found.variant : null;
    },
    async forget(tenantId, customerId, experimentIds) {
      changed(tenantId);
      return experimentIds.filter((id) => kept.delete(tenantKey(tenantId, assignmentKey(id, customerId)))).length;
    },
    async count(tenantId, customerId, experimentIds) {
      return experimentIds.filter((id) => kept.has(tenantKey(tenantId, assignmentKey(id, customerId)))).length;
    },
    async resetTenant(tenantId) {
      deleteTenantKeys(kept, tenantId);
      changed(tenantId);
    },
    dump(tenantIds) {
      const out = new Map<string, AssignmentSnapshot>();
      for (const [tenantId, entries] of entriesByTenant(kept, tenantIds)) {
        const assignments = entries.filter(([, a]) => a.expiresAt > now()).map(([key, a]): [string, string, number] => [key, a.variant, a.expiresAt]);
        if (assignments.length) out.set(tenantId, { assignments });
      }
      return out;
    },
    load(tenantId, state) {
      for (const [key, variant, expiresAt] of savedList<AssignmentSnapshot["assignments"][number]>(state, "assignments")) {
        if (expiresAt > now()) kept.set(tenantKey(tenantId, key), { variant, expiresAt });
      }
    },
  };
}

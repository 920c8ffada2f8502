import { contextBuckets, type DecisionInput, type DecisionSnapshot } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import type { Logger } from "../platform/logger.js";
import type { BucketRegistry } from "./bucket-registry.js";

/** What this process learnt about one snapshot's buckets. */
interface Seen {
  /** `<space>:<bucket>` the registry admitted: admitted once, admitted until the reset. */
  admitted: Set<string>;
  /** Spaces already reported full. */
  reported: Set<string>;
}

/**
 * Which of a decision's context buckets are over the tenant's cap (bucket-registry.ts), so that
 * the decision counts in the all-contexts bucket instead (DecisionInput.bucketsOverCap). A bucket
 * once admitted stays admitted until a workspace reset, so this process remembers admissions per
 * configuration snapshot and asks Redis only about buckets it has not seen admitted: a decision in
 * a known bucket costs no round trip. A reset replaces the snapshot in every process, and with it
 * what they remember; so does any configuration change, which costs one round trip per bucket.
 */
export class BucketAdmission {
  private readonly seen = new WeakMap<DecisionSnapshot, Seen>();

  constructor(
    private readonly registry: BucketRegistry,
    private readonly logger: Logger,
  ) {}

  async bucketsOverCap(ctx: TenantContext, snapshot: DecisionSnapshot, input: Omit<DecisionInput, "clv" | "seed">): Promise<string[]> {
    const buckets = contextBuckets(snapshot, input);
    if (!buckets.length) return [];
    let seen = this.seen.get(snapshot);
    if (!seen) this.seen.set(snapshot, (seen = { admitted: new Set(), reported: new Set() }));
    const unknown = buckets.filter(({ space, bucket }) => !seen.admitted.has(`${space}:${bucket}`));
    if (!unknown.length) return [];
    const admitted = await this.registry.admit(ctx.tenantId, unknown);
    const over: string[] = [];
    unknown.forEach(({ space, bucket }, i) => {
      if (admitted[i]) return void seen.admitted.add(`${space}:${bucket}`);
      over.push(bucket);
      if (seen.reported.has(space)) return;
      seen.reported.add(space);
      this.logger.warn(
        { tenantId: ctx.tenantId, requestId: ctx.requestId, bucketSpace: space },
        "adaptive context buckets at their cap: decisions in new buckets count in the all-contexts bucket",
      );
    });
    return over;
  }
}

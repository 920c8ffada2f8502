import type { ClvRecord, ComputeClvRequest, ComputeClvResponse, CustomerClvRequest } from "../../gen/decisioning/v1/customers_pb.js";
import { create } from "@bufbuild/protobuf";
import { ComputeClvResponseSchema } from "../../gen/decisioning/v1/customers_pb.js";
import { CLV_SEGMENTS, computeClv, isClvSegment, withEventActivity, type ClvSegment } from "../core/index.js";
import type { TenantContext } from "../platform/context.js";
import { invalidField, notFound } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { customerIdOf } from "./customer-id.js";
import { toClvRecord, type ClvSource } from "./clv-mapper.js";
import type { ClvRow, ClvStore } from "./clv-store.js";
import type { DecisionHistory } from "./decision-history.js";
import type { CustomerEventHistory } from "./customer-activity.js";

/** Spec 8: the CLV batch. */
export const CLV_BATCH = 50;
/** Batches computed at once: a page is this many batches, well inside the database pool. */
const PARALLEL_BATCHES = 4;

export interface ClvServiceDeps {
  store: ClvStore;
  history: Pick<DecisionHistory, "rfmFacts" | "customerIdsAfter">;
  logger: Logger;
  /** After records changed: Recommend's customer cache drops those customers in every process. */
  changed: (tenantId: string, customerIds: readonly string[]) => Promise<void>;
  /** The events domain's activity: events count for recency and tenure (docs/clv.md). */
  events?: Pick<CustomerEventHistory, "activitySpans" | "customerIdsAfter">;
  now?: () => Date;
}

/** CLV per customer and in bulk (spec 4.14); the model is src/core/clv.ts. */
export class ClvService {
  private readonly now: () => Date;

  constructor(private readonly deps: ClvServiceDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  async getCustomerClv(ctx: TenantContext, req: CustomerClvRequest): Promise<ClvRecord> {
    const customerId = customerIdOf(req.customerId);
    const cached = await this.deps.store.record(ctx.tenantId, customerId);
    if (cached) return toClvRecord(cached, "cached");
    return this.computeOne(ctx, customerId, "computed");
  }

  async recomputeCustomerClv(ctx: TenantContext, req: CustomerClvRequest): Promise<ClvRecord> {
    return this.computeOne(ctx, customerIdOf(req.customerId), "recomputed");
  }

  /**
   * Every customer of the tenant, or those of one segment plus those without a record, in keyset
   * pages of PARALLEL_BATCHES × CLV_BATCH ids: memory stays one page whatever the tenant's size. A
   * failed batch counts its customers as errors and the run goes on.
   */
  async computeClv(ctx: TenantContext, req: ComputeClvRequest): Promise<ComputeClvResponse> {
    const segment = req.segment === undefined ? null : req.segment.trim();
    if (segment !== null && !isClvSegment(segment)) throw invalidField("segment", `must be one of ${CLV_SEGMENTS.join(", ")}`);
    const log = this.deps.logger.child({ tenantId: ctx.tenantId, requestId: ctx.requestId, segment: segment ?? "all" });
    const pageSize = CLV_BATCH * PARALLEL_BATCHES;
    let after = "";
    let computed = 0;
    let errors = 0;
    let pages = 0;
    for (;;) {
      const ids = await this.pageAfter(ctx.tenantId, after, pageSize);
      if (!ids.length) break;
      after = ids[ids.length - 1];
      const batches = Array.from({ length: Math.ceil(ids.length / CLV_BATCH) }, (_, i) => ids.slice(i * CLV_BATCH, (i + 1) * CLV_BATCH));
      const outcomes = await Promise.allSettled(batches.map((batch) => this.computeBatch(ctx.tenantId, batch, segment)));
      const saved: string[] = [];
      outcomes.forEach((outcome, i) => {
        if (outcome.status === "fulfilled") saved.push(...outcome.value);
        else {
          errors += batches[i].length;
          log.error({ err: outcome.reason, first: batches[i][0] }, "clv batch failed");
        }
      });
      computed += saved.length;
      // One cache invalidation for the page's saved customers, not one message per customer.
      await this.deps.changed(ctx.tenantId, saved);
      if (++pages % 10 === 0) log.info({ computed, errors, after }, "clv compute progress");
      if (ids.length < pageSize) break;
    }
    log.info({ computed, errors }, "clv compute finished");
    return create(ComputeClvResponseSchema, { success: errors === 0, computed, errors, segment: segment ?? "all" });
  }

  /**
   * The next page of customer ids after `after`: those with a stored record or interactions (the
   * decisions domain) merged with those known only by events. Each source gives its own first
   * `limit`; the first `limit` of their union is then complete, since any id a source left out
   * sorts after that source's `limit` ids, which are all in the union.
   */
  private async pageAfter(tenantId: string, after: string, limit: number): Promise<string[]> {
    const [decided, evented] = await Promise.all([
      this.deps.history.customerIdsAfter(tenantId, after, limit),
      this.deps.events ? this.deps.events.customerIdsAfter(tenantId, after, limit) : [],
    ]);
    if (!evented.length) return decided;
    return this.deps.store.firstIds([...decided, ...evented], limit);
  }

  private async computeOne(ctx: TenantContext, customerId: string, source: ClvSource): Promise<ClvRecord> {
    const [row] = await this.computeAndSave(ctx.tenantId, [customerId]);
    if (!row) throw notFound("customer", customerId);
    await this.deps.changed(ctx.tenantId, [customerId]);
    return toClvRecord(row, source);
  }

  /** One batch: customers outside `segment` (when given) that already have a record are left alone. Returns the saved ids. */
  private async computeBatch(tenantId: string, ids: string[], segment: ClvSegment | null): Promise<string[]> {
    let chosen = ids;
    if (segment) {
      const current = await this.deps.store.segments(tenantId, ids);
      chosen = ids.filter((id) => !current.has(id) || current.get(id) === segment);
    }
    return (await this.computeAndSave(tenantId, chosen)).map((r) => r.customer_id);
  }

  private async computeAndSave(tenantId: string, ids: string[]): Promise<ClvRow[]> {
    if (!ids.length) return [];
    const now = this.now();
    const [decided, events] = await Promise.all([
      this.deps.history.rfmFacts(tenantId, ids),
      this.deps.events ? this.deps.events.activitySpans(tenantId, ids) : new Map<string, { firstAt: number; lastAt: number }>(),
    ]);
    const results = ids.flatMap((customerId) => {
      const facts = withEventActivity(decided.get(customerId), events.get(customerId));
      return facts ? [{ customerId, result: computeClv(facts, now.getTime()) }] : [];
    });
    return this.deps.store.save(tenantId, results, now);
  }
}

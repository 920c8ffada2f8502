import { create } from "@bufbuild/protobuf";
import { RecommendRequestSchema, type RecommendRequest, type RecommendResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import type { TenantContext } from "../platform/context.js";

/** Decisions of a batch made at once: enough to keep the worker pool's threads busy while commits wait on Redis and PostgreSQL. */
const CONCURRENCY = 8;

export interface BatchCustomer {
  customerId: string;
  attributes: Record<string, unknown>;
}

export interface BatchDecisionResult {
  customerId: string;
  recommendationId: string;
  offers: Array<{ offerId: string; rank: number; score: number }>;
}

type Recommend = (ctx: TenantContext, req: RecommendRequest, options: { preferPool?: boolean }) => Promise<RecommendResponse>;

/**
 * Batch decisions (spec 1: decisions "when batch pipeline runs produce decisions"): each customer
 * is one Recommend, so it counts against the decision quota, obeys contact policies, caps and
 * budgets, and is stored and traced exactly as an API call would be; scoring goes to the worker
 * pool. The first failure (an exhausted quota) stops the batch and is thrown.
 */
export async function decideBatch(recommend: Recommend, tenantId: string, flow: string, limit: number, customers: readonly BatchCustomer[]): Promise<BatchDecisionResult[]> {
  const ctx: TenantContext = { tenantId, userId: null, actorName: "pipeline", role: "admin", principal: { kind: "internal" }, requestId: `batch-${tenantId}` };
  const out: BatchDecisionResult[] = new Array(customers.length);
  let next = 0;
  const worker = async () => {
    while (next < customers.length) {
      const i = next++;
      const c = customers[i];
      const res = await recommend(ctx, create(RecommendRequestSchema, { customerId: c.customerId, flow, limit, attributes: c.attributes as never }), { preferPool: true });
      out[i] = { customerId: c.customerId, recommendationId: res.recommendationId, offers: res.offers.map((o) => ({ offerId: o.offerId, rank: o.rank, score: o.score })) };
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, customers.length) }, worker));
  return out;
}

/**
 * What the benchmark sends: a deterministic customer population, the 200 offers, and a
 * gradient-boosted model in XGBoost's JSON dump format (`dump_model(..., dump_format="json",
 * with_stats=True)`), generated from a fixed seed so every run scores the same trees.
 */
import { create } from "@bufbuild/protobuf";
import { RecommendRequestSchema, type RecommendRequest } from "../gen/decisioning/v1/decisions_pb.js";
import { mulberry32 } from "../src/core/random.js";
import type { XgbNode } from "../src/core/scoring/models.js";

/** Numeric features the model splits on, with the range each one is drawn from. */
export const FEATURES: Record<string, [number, number]> = {
  "customer.age": [18, 80],
  "customer.income": [10_000, 200_000],
  "customer.tenureMonths": [0, 120],
  "customer.visits30d": [0, 30],
  "customer.basketValue": [0, 500],
  "context.hour": [0, 23],
  "context.sessionSeconds": [0, 1800],
  "context.pageDepth": [1, 20],
  // Offer fields make the score differ between candidates.
  "offer.priority": [0, 100],
  "offer.businessValue": [0, 100],
};

export interface BenchCustomer {
  customerId: string;
  attributes: Record<string, number>;
  context: Record<string, number>;
}

/** `n` customers with numeric attributes and a request context each. */
export function customers(n: number, seed = 7): BenchCustomer[] {
  const rnd = mulberry32(seed);
  const draw = (name: string) => {
    const [lo, hi] = FEATURES[name];
    return Math.round(lo + rnd() * (hi - lo));
  };
  return Array.from({ length: n }, (_, i) => ({
    customerId: `bench-customer-${i}`,
    attributes: {
      age: draw("customer.age"),
      income: draw("customer.income"),
      tenureMonths: draw("customer.tenureMonths"),
      visits30d: draw("customer.visits30d"),
      basketValue: draw("customer.basketValue"),
    },
    context: {
      hour: draw("context.hour"),
      sessionSeconds: draw("context.sessionSeconds"),
      pageDepth: draw("context.pageDepth"),
    },
  }));
}

/** The bench's Recommend: its one customer (h2load sends one body), on `flow` or the default flow. */
export function benchRecommendRequest(flow = ""): RecommendRequest {
  const [who] = customers(1);
  return create(RecommendRequestSchema, { customerId: who.customerId, attributes: who.attributes, context: who.context, flow });
}

/** The body of offer i of the catalog (all active, no creatives, so no channel coupling). */
export function offerBody(i: number): Record<string, unknown> {
  return {
    name: `bench-offer-${String(i).padStart(3, "0")}`,
    status: "active",
    priority: (i * 37) % 101,
    businessValue: (i * 53) % 101,
    description: "benchmark offer",
  };
}

/**
 * `count` trees of the given depth, numbered breadth-first as XGBoost numbers them, each split on
 * a random feature at a threshold inside its range; leaves are small margins.
 */
export function xgboostTrees(count: number, depth: number, seed = 42): XgbNode[] {
  const rnd = mulberry32(seed);
  const names = Object.keys(FEATURES);
  const tree = (): XgbNode => {
    let next = 0;
    const node = (level: number, cover: number): XgbNode => {
      const nodeid = next++;
      if (level === depth) return { nodeid, leaf: Math.round((rnd() - 0.5) * 0.2 * 1e6) / 1e6, cover };
      const feature = names[Math.floor(rnd() * names.length)];
      const [lo, hi] = FEATURES[feature];
      // `depth` and `gain` are in real dumps too; the evaluator ignores them.
      const split = { nodeid, depth: level, split: feature, split_condition: Math.round(lo + (0.2 + 0.6 * rnd()) * (hi - lo)) };
      return { ...split, gain: Math.round(rnd() * 1e4) / 100, cover } as XgbNode;
    };
    // Breadth-first numbering: build level by level, then link children.
    const root = node(0, 1000);
    let frontier: Array<{ n: XgbNode; level: number }> = [{ n: root, level: 0 }];
    while (frontier.length) {
      const nextFrontier: typeof frontier = [];
      for (const { n, level } of frontier) {
        if (!("split" in n)) continue;
        const share = 0.3 + 0.4 * rnd();
        const yes = node(level + 1, Math.max(1, Math.round(n.cover! * share)));
        const no = node(level + 1, Math.max(1, n.cover! - yes.cover!));
        Object.assign(n, { yes: yes.nodeid, no: no.nodeid, missing: rnd() < 0.5 ? yes.nodeid : no.nodeid, children: [yes, no] });
        nextFrontier.push({ n: yes, level: level + 1 }, { n: no, level: level + 1 });
      }
      frontier = nextFrontier;
    }
    return root;
  };
  return Array.from({ length: count }, tree);
}

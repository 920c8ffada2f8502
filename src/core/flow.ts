/**
 * Decision flows: which offers are candidates, which model scores them, how they are ranked. A
 * flow is a list of typed nodes; the four stages always run in order, and the nodes configure
 * them. The first node of each type counts; a missing node takes its default (all offers, the
 * default adaptive model, the default ranking profile). Tenants without a flow get DEFAULT_FLOW.
 */
import type { Offer } from "./catalog.js";
import { appliesToOffer } from "./offer-scope.js";
import { DEFAULT_MODEL } from "./scoring/models.js";

export type FlowNode =
  | { type: "candidates"; offerIds?: string[]; categoryIds?: string[] }
  | { type: "score"; modelKey: string; shadowModelKeys?: string[] }
  | { type: "rank"; profileId?: string; count?: number };

export interface DecisionFlow {
  id: string;
  name?: string;
  nodes: FlowNode[];
}

export const DEFAULT_FLOW: DecisionFlow = {
  id: "default",
  name: "All active offers, adaptive scoring, default ranking",
  nodes: [{ type: "candidates" }, { type: "score", modelKey: DEFAULT_MODEL.key }, { type: "rank" }],
};

type NodeOf<T extends FlowNode["type"]> = Extract<FlowNode, { type: T }>;

function node<T extends FlowNode["type"]>(flow: DecisionFlow, type: T): NodeOf<T> | undefined {
  return flow.nodes.find((n): n is NodeOf<T> => n.type === type);
}

/**
 * Candidates by catalog, then by flow. A snapshot's offers and flows do not change while it serves,
 * and a decision resolves its scope three times (evidence keys, counters, the decision), so the
 * 200-offer filter runs once per snapshot and flow instead of three times per decision.
 */
const candidatesByCatalog = new WeakMap<readonly Offer[], Map<DecisionFlow, readonly Offer[]>>();

/** The flow's candidate offers, in catalog order; `offers` and `flow` must not change afterwards. */
export function flowCandidates(flow: DecisionFlow, offers: readonly Offer[]): readonly Offer[] {
  let byFlow = candidatesByCatalog.get(offers);
  if (!byFlow) candidatesByCatalog.set(offers, (byFlow = new Map()));
  let candidates = byFlow.get(flow);
  if (!candidates) {
    const scope = node(flow, "candidates");
    // Read-only by type, not frozen: a frozen array's for-of is ten times slower (evidence.ts).
    byFlow.set(flow, (candidates = offers.filter((offer) => appliesToOffer(scope, offer))));
  }
  return candidates;
}

export function flowScoreNode(flow: DecisionFlow): NodeOf<"score"> {
  return node(flow, "score") ?? { type: "score", modelKey: DEFAULT_MODEL.key };
}

export function flowRankNode(flow: DecisionFlow): NodeOf<"rank"> {
  return node(flow, "rank") ?? { type: "rank" };
}

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

/** The flow's candidate offers, in catalog order. */
export function flowCandidates(flow: DecisionFlow, offers: readonly Offer[]): Offer[] {
  const scope = node(flow, "candidates");
  return offers.filter((offer) => appliesToOffer(scope, offer));
}

export function flowScoreNode(flow: DecisionFlow): NodeOf<"score"> {
  return node(flow, "score") ?? { type: "score", modelKey: DEFAULT_MODEL.key };
}

export function flowRankNode(flow: DecisionFlow): NodeOf<"rank"> {
  return node(flow, "rank") ?? { type: "rank" };
}

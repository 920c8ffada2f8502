/**
 * What a request selects before any stage runs: the flow, its candidate offers, the slots to fill
 * and the channel contact policies apply to. Shared by `prepareDecision` and `counterPlan`, so the
 * service reads exactly the counters the decision will check.
 */
import type { Channel, Offer } from "./catalog.js";
import { decisionChannel, decisionSlots, type Slot } from "./channel-coupling.js";
import { flowCandidates, type DecisionFlow } from "./flow.js";
import type { DecisionSnapshot } from "./snapshot.js";
import { requireInstant } from "./time.js";

export interface RequestScopeInput {
  customerId: string;
  /** Channel id the response is for, if the caller knows it. */
  channel?: string | null;
  /** Placement ids to fill, in order; none means a single slot. */
  placements?: string[];
  /** A flow of the snapshot; default the snapshot's default flow. The service checks it exists. */
  flowId?: string;
  /** The decision's instant (ISO 8601); the core never reads the clock. */
  now: string;
}

export interface RequestScope {
  flow: DecisionFlow;
  candidates: readonly Offer[];
  slots: Slot[];
  channel: Channel | null;
  nowMs: number;
}

/** The flow a request runs: its `flowId`, else the snapshot's default flow. */
export function requestFlow(snapshot: DecisionSnapshot, input: Pick<RequestScopeInput, "flowId">): DecisionFlow {
  const flow = input.flowId === undefined ? snapshot.defaultFlow : snapshot.flowsById.get(input.flowId);
  if (!flow) throw new Error(`flow ${input.flowId} is not in the snapshot`);
  return flow;
}

/**
 * The last `now` parsed, as text and milliseconds: a decision resolves its scope three times
 * (evidence keys, counters, the decision) with the same instant, and parsing it is most of a scope.
 */
let lastNowText: string | undefined;
let lastNowMs = 0;

function nowMsOf(now: string): number {
  if (now !== lastNowText) {
    lastNowMs = requireInstant(now, "now");
    lastNowText = now;
  }
  return lastNowMs;
}

export function resolveRequestScope(snapshot: DecisionSnapshot, input: RequestScopeInput): RequestScope {
  const flow = requestFlow(snapshot, input);
  const slots = decisionSlots(snapshot.placementsById, input.channel, input.placements);
  return {
    flow,
    candidates: flowCandidates(flow, snapshot.offers),
    slots,
    channel: decisionChannel(slots, snapshot.channelsById),
    nowMs: nowMsOf(input.now),
  };
}

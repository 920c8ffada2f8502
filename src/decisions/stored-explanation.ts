import type { DecisionTrace } from "../../gen/decisioning/v1/decisions_pb.js";
import type { TraceRow } from "./decision-store.js";
import { traceMessage } from "./trace-record.js";

/**
 * What a trace held before migration 0006 (replay records, ADR 4): the explanation itself, in the
 * shape of spec 2.16, with the inputs the stages read. Such rows have no stored configuration to
 * replay against, and need none: they are served as they were written.
 */
export interface StoredExplanation {
  scoringResults?: unknown[];
  selectedOffers?: unknown[];
  qualificationResults: unknown[];
  contactPolicyResults?: unknown[];
  rejectedOffers?: unknown[];
  rankingWeights?: Record<string, unknown>;
  inputs?: Record<string, unknown>;
}

/** A replay record always has `refusals`; an explanation never did, and always had `qualificationResults`. */
export function isStoredExplanation(stored: unknown): stored is StoredExplanation {
  const s = stored as Record<string, unknown>;
  return typeof s === "object" && s !== null && !("refusals" in s) && Array.isArray(s.qualificationResults);
}

/** The stored explanation read into the message, with the defaults the reader of that time used. */
export function storedExplanationTrace(row: Omit<TraceRow, "trace">, stored: StoredExplanation): DecisionTrace {
  return traceMessage(row, {
    scoringResults: stored.scoringResults ?? [],
    selectedOffers: stored.selectedOffers ?? [],
    qualificationResults: stored.qualificationResults,
    contactPolicyResults: stored.contactPolicyResults ?? [],
    rejectedOffers: stored.rejectedOffers ?? [],
    rankingWeights: stored.rankingWeights ?? {},
    inputs: stored.inputs ?? {},
  });
}

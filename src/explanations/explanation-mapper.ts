import { create, toJson, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { DecisionTraceSchema, type DecisionTrace } from "../../gen/decisioning/v1/decisions_pb.js";
import {
  DecisionNarrativeSchema,
  ShapExplanationSchema,
  type DecisionNarrative,
  type ShapExplanation,
} from "../../gen/decisioning/v1/explanations_pb.js";
import type { DecisionShap } from "../core/index.js";
import type { NarrativeFacts } from "./narrative-facts.js";
import type { WriterIdentity } from "./narrative-writer.js";

/** The trace as the JSON of spec 2.16, what the narrative facts are read from. */
export function traceJson(trace: DecisionTrace): Record<string, unknown> {
  return toJson(DecisionTraceSchema, trace) as Record<string, unknown>;
}

export function toShapExplanation(trace: DecisionTrace, shap: DecisionShap): ShapExplanation {
  const names = new Map(
    ((traceJson(trace).scoringResults ?? []) as Array<{ offerId?: unknown; offerName?: unknown }>).map((r) => [String(r.offerId), typeof r.offerName === "string" ? r.offerName : ""]),
  );
  return create(ShapExplanationSchema, {
    traceId: trace.id,
    recommendationId: trace.recommendationId,
    modelId: shap.modelId,
    modelKey: shap.modelKey,
    modelType: "gradient_boosted",
    objective: shap.objective,
    algorithm: "tree_shap_path_dependent",
    outputSpace: "raw_margin",
    baseValue: shap.baseValue,
    coverSource: shap.uniformWeights ? "uniform" : "node_cover",
    additivityResidual: shap.additivityResidual,
    candidates: shap.candidates.map((c) => ({
      offerId: c.offerId,
      offerName: names.get(c.offerId) ?? "",
      score: c.score,
      margin: c.margin,
      additivityResidual: c.additivityResidual,
      contributions: c.contributions.map((f) => ({ feature: f.feature, attribute: f.attribute, value: f.value ?? undefined, contribution: f.contribution })),
    })),
  });
}

export interface NarrativeResult {
  trace: DecisionTrace;
  mode: string;
  narrative: string;
  writer: WriterIdentity;
  fallbackReason: string | null;
  cached: boolean;
  facts: NarrativeFacts | Record<string, unknown>;
  generatedAt: Date;
  expiresAt: Date | null;
}

export function toDecisionNarrative(r: NarrativeResult): DecisionNarrative {
  return create(DecisionNarrativeSchema, {
    traceId: r.trace.id,
    recommendationId: r.trace.recommendationId,
    mode: r.mode,
    narrative: r.narrative,
    writer: { kind: r.writer.kind, model: r.writer.model, label: r.writer.label, fallbackReason: r.fallbackReason ?? undefined },
    cached: r.cached,
    generatedAt: timestampFromDate(r.generatedAt),
    expiresAt: r.expiresAt ? timestampFromDate(r.expiresAt) : undefined,
    // Through JSON: the facts are plain data, and Struct wants no undefined members.
    facts: JSON.parse(JSON.stringify(r.facts)) as JsonObject,
    inputsHash: r.trace.inputsHash,
  });
}

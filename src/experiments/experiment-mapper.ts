import { create, toJson } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ExperimentResultsSchema,
  ExperimentSchema,
  type Experiment,
  type ExperimentResults,
} from "../../gen/decisioning/v1/experiments_pb.js";
import type { ExperimentAnalysis, ExperimentSplit } from "../core/index.js";
import type { ExperimentRow } from "./experiment-store.js";

const stamp = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

export function toExperiment(row: ExperimentRow): Experiment {
  return create(ExperimentSchema, {
    id: row.id,
    tenantId: row.tenant_id,
    key: row.key,
    name: row.name,
    flowId: row.flow_id ?? undefined,
    championModelId: row.champion_model_id,
    trafficSplit: { championPct: row.champion_pct },
    challengers: row.challengers.map((c) => ({ modelId: c.modelId, key: c.key ?? undefined, trafficPct: c.trafficPct })),
    holdoutPercent: row.holdout_percent,
    status: row.status,
    autoPromote: row.auto_promote,
    promoteThreshold: row.promote_threshold,
    promoteAfterDays: row.promote_after_days,
    startedAt: stamp(row.started_at),
    promotedModelId: row.promoted_model_id ?? undefined,
    promotedAt: stamp(row.promoted_at),
    version: row.version,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

/** The audit snapshot: the experiment as the API shows it (spec 2.6). */
export function experimentSnapshot(row: ExperimentRow): Record<string, unknown> {
  return toJson(ExperimentSchema, toExperiment(row), { alwaysEmitImplicit: true }) as Record<string, unknown>;
}

/** What assignment and coverage read of a stored experiment (the core's shape). */
export function toSplit(row: ExperimentRow): ExperimentSplit {
  return {
    id: row.id,
    key: row.key,
    flowId: row.flow_id,
    championModelId: row.champion_model_id,
    championPct: row.champion_pct,
    challengers: row.challengers,
    holdoutPercent: row.holdout_percent,
  };
}

export function toResults(analysis: ExperimentAnalysis): ExperimentResults {
  return create(ExperimentResultsSchema, {
    variants: analysis.variants.map((v) => ({
      variant: v.variant,
      modelId: v.modelId ?? undefined,
      samples: v.samples,
      conversions: v.conversions,
      rate: v.rate,
      wilsonLower: v.wilsonLower,
      wilsonUpper: v.wilsonUpper,
      ...(v.comparison && {
        absoluteUplift: v.comparison.absoluteUplift ?? undefined,
        relativeUplift: v.comparison.relativeUplift ?? undefined,
        zScore: v.comparison.zScore ?? undefined,
        pValue: v.comparison.pValue ?? undefined,
        significant: v.comparison.significant,
      }),
    })),
    requiredSampleSize: analysis.requiredSampleSize ?? undefined,
    srm: analysis.srm,
    parameters: { ...analysis.parameters, baselineRate: analysis.parameters.baselineRate ?? undefined },
  });
}

import { create } from "@bufbuild/protobuf";
import { GetExperimentResultsRequestSchema, type ExperimentResults, type GetExperimentResultsRequest } from "../../gen/decisioning/v1/experiments_pb.js";
import type { TenantContext } from "../platform/context.js";
import { isAppError, invalidField } from "../platform/errors.js";
import { DataSourceRegistry, PERIOD_PARAMETERS, periodOf, type DataSource } from "./data-source-registry.js";
import type { PerformanceRow, ReportDataStore } from "./report-data-store.js";
import type { ReportColumn } from "./report-document.js";

/** The experiments domain's results (spec 4.12 `GET /experiments/{id}/results`): the same code, so the same numbers. */
export interface ExperimentResultsReader {
  results(ctx: TenantContext, req: GetExperimentResultsRequest): Promise<ExperimentResults>;
}

const MEASURE_COLUMNS: ReportColumn[] = [
  { name: "recommendations", type: "integer" },
  { name: "impressions", type: "integer" },
  { name: "clicks", type: "integer" },
  { name: "positiveResponses", type: "integer" },
  { name: "negativeResponses", type: "integer" },
  { name: "ctr", type: "percent", unit: "%" },
  { name: "conversionRate", type: "percent", unit: "%" },
  { name: "revenue", type: "currency" },
];

const measures = (r: PerformanceRow) => [r.recommendations, r.impressions, r.clicks, r.positive, r.negative, r.ctr, r.conversion_rate, r.revenue];

/** A share in percent, rounded like the SQL's; null when the base is 0. */
const percent = (num: number, den: number) => (den > 0 ? Math.round((1_000_000 * num) / den) / 10_000 : null);

/** The data sources of docs/reports.md over the store's aggregates and the experiments' results. */
export function createDataSources(store: ReportDataStore, experiments: ExperimentResultsReader): DataSourceRegistry {
  const sources: DataSource[] = [
    {
      key: "offer_performance",
      title: "Offer performance",
      description: "Per offer over the period: recommendations, impressions, responses by outcome category, CTR, conversion rate and revenue; most impressions first.",
      parameters: [...PERIOD_PARAMETERS, { name: "limit", type: "integer", min: 1, max: 1000, default: 100, description: "At most this many offers." }],
      columns: [{ name: "offer", type: "string" }, { name: "offerId", type: "string" }, ...MEASURE_COLUMNS],
      chart: { kind: "bar", x: "offer", y: ["impressions", "clicks"] },
      async compute(ctx, params, now) {
        const period = periodOf(params, now);
        const rows = await store.offerPerformance(ctx.tenantId, period, params.limit as number);
        return { period, rows: rows.map((r) => [r.offer, r.offer_id, ...measures(r)]) };
      },
    },
    {
      key: "decision_volume",
      title: "Decision volume",
      description: "Decisions per local day (or hour) of the period, with those that returned no offer and those whose scoring degraded.",
      parameters: [...PERIOD_PARAMETERS, { name: "granularity", type: "enum", allowedValues: ["day", "hour"], default: "day", description: "Bucket size." }],
      columns: [
        { name: "period", type: "date" },
        { name: "decisions", type: "integer" },
        { name: "emptyCandidateDecisions", type: "integer" },
        { name: "degradedDecisions", type: "integer" },
      ],
      chart: { kind: "line", x: "period", y: ["decisions", "emptyCandidateDecisions", "degradedDecisions"] },
      async compute(ctx, params, now) {
        const period = periodOf(params, now);
        const rows = await store.decisionVolume(ctx.tenantId, period, params.granularity as "day" | "hour");
        return { period, rows: rows.map((r) => [r.bucket, r.decisions, r.empty, r.degraded]) };
      },
    },
    {
      key: "channel_performance",
      title: "Channel performance",
      description: "The offer measures per channel and placement over the period; most impressions first.",
      parameters: PERIOD_PARAMETERS,
      columns: [{ name: "channel", type: "string" }, { name: "placement", type: "string" }, ...MEASURE_COLUMNS],
      chart: { kind: "bar", x: "channel", y: ["impressions", "clicks"] },
      async compute(ctx, params, now) {
        const period = periodOf(params, now);
        const rows = await store.channelPerformance(ctx.tenantId, period);
        return { period, rows: rows.map((r) => [r.channel, r.placement, ...measures(r)]) };
      },
    },
    {
      key: "experiment_results",
      title: "Experiment results",
      description: "One experiment's variants with the figures of GET /api/v1/experiments/{id}/results (all of its data, no period).",
      parameters: [{ name: "experimentId", type: "uuid", required: true, description: "The experiment." }],
      columns: [
        { name: "variant", type: "string" },
        { name: "modelId", type: "string" },
        { name: "samples", type: "integer" },
        { name: "conversions", type: "integer" },
        { name: "rate", type: "number" },
        { name: "wilsonLower", type: "number" },
        { name: "wilsonUpper", type: "number" },
        { name: "absoluteUplift", type: "number" },
        { name: "relativeUplift", type: "number" },
        { name: "zScore", type: "number" },
        { name: "pValue", type: "number" },
        { name: "significant", type: "boolean" },
      ],
      chart: { kind: "bar", x: "variant", y: ["rate"] },
      async compute(ctx, params) {
        let results: ExperimentResults;
        try {
          results = await experiments.results(ctx, create(GetExperimentResultsRequestSchema, { id: params.experimentId as string }));
        } catch (err) {
          if (isAppError(err) && err.code === "NOT_FOUND") throw invalidField("params.experimentId", `unknown experiment ${params.experimentId}`);
          throw err;
        }
        return {
          period: null,
          rows: results.variants.map((v) => [
            v.variant, v.modelId ?? null, v.samples, v.conversions, v.rate, v.wilsonLower, v.wilsonUpper,
            v.absoluteUplift ?? null, v.relativeUplift ?? null, v.zScore ?? null, v.pValue ?? null, v.significant ?? null,
          ]),
        };
      },
    },
    {
      key: "funnel",
      title: "Decision funnel",
      description: "Candidates through qualification, contact policy, scoring and ranking, over the period's decisions that have a stored trace.",
      parameters: PERIOD_PARAMETERS,
      columns: [
        { name: "stage", type: "string" },
        { name: "candidates", type: "integer" },
        { name: "dropped", type: "integer" },
        { name: "dropRate", type: "percent", unit: "%" },
      ],
      chart: { kind: "bar", x: "stage", y: ["candidates"] },
      async compute(ctx, params, now) {
        const period = periodOf(params, now);
        const f = await store.funnel(ctx.tenantId, period);
        const stage = (name: string, before: number, after: number) => [name, after, before - after, percent(before - after, before)];
        return {
          period,
          rows: [
            ["considered", f.considered, null, null],
            stage("qualification", f.considered, f.qualified),
            stage("contact_policy", f.qualified, f.contactable),
            // Scoring orders candidates and drops none; what ranking leaves out is ranking's.
            stage("scoring", f.contactable, f.contactable),
            stage("ranking", f.contactable, f.selected),
          ],
        };
      },
    },
    {
      key: "alert_history",
      title: "Alert history",
      description: "Per alert rule over the period: firings (evaluation slots that dispatched) and their deliveries by outcome.",
      parameters: PERIOD_PARAMETERS,
      columns: [
        { name: "rule", type: "string" },
        { name: "firings", type: "integer" },
        { name: "deliveries", type: "integer" },
        { name: "accepted", type: "integer" },
        { name: "failed", type: "integer" },
        { name: "lastFiredAt", type: "timestamp" },
      ],
      chart: { kind: "bar", x: "rule", y: ["firings"] },
      async compute(ctx, params, now) {
        const period = periodOf(params, now);
        const rows = await store.alertHistory(ctx.tenantId, period);
        return { period, rows: rows.map((r) => [r.rule, r.firings, r.deliveries, r.accepted, r.failed, r.last_fired_at.toISOString()]) };
      },
    },
  ];
  return new DataSourceRegistry(sources);
}

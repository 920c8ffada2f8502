import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ClvRecordSchema, type ClvRecord } from "../../gen/decisioning/v1/customers_pb.js";
import type { ClvRow } from "./clv-store.js";

export type ClvSource = "cached" | "computed" | "recomputed";

export function toClvRecord(row: ClvRow, source: ClvSource): ClvRecord {
  return create(ClvRecordSchema, {
    customerId: row.customer_id,
    clvScore: row.clv_score,
    predictedRevenue: row.predicted_revenue,
    churnProbability: row.churn_probability,
    rfmRecency: row.rfm_recency,
    rfmFrequency: row.rfm_frequency,
    rfmMonetary: row.rfm_monetary,
    segment: row.segment,
    computedAt: timestampFromDate(row.computed_at),
    source,
  });
}

/** The record as plain JSON, for the structured profile's `clv`. */
export function clvJson(row: ClvRow): Record<string, unknown> {
  return {
    customerId: row.customer_id,
    clvScore: row.clv_score,
    predictedRevenue: row.predicted_revenue,
    churnProbability: row.churn_probability,
    rfmRecency: row.rfm_recency,
    rfmFrequency: row.rfm_frequency,
    rfmMonetary: row.rfm_monetary,
    segment: row.segment,
    computedAt: row.computed_at.toISOString(),
  };
}

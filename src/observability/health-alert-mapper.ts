import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { HealthAlertSchema, type HealthAlert } from "../../gen/decisioning/v1/observability_pb.js";
import type { HealthAlertRow } from "./health-alert-store.js";

export function toHealthAlert(row: HealthAlertRow): HealthAlert {
  return create(HealthAlertSchema, {
    id: row.id,
    key: row.key,
    severity: row.severity,
    message: row.message,
    details: row.details as JsonObject,
    status: row.status,
    raisedAt: timestampFromDate(row.raised_at),
    updatedAt: timestampFromDate(row.updated_at),
    resolvedAt: row.resolved_at ? timestampFromDate(row.resolved_at) : undefined,
  });
}

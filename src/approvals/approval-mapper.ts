import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AiRecommendationSchema,
  ApprovalRequestSchema,
  ApprovalStageSchema,
  type AiRecommendation,
  type ApprovalRequest,
} from "../../gen/decisioning/v1/approvals_pb.js";
import type { ApprovalRow } from "./approval-store.js";
import type { RecommendationRow } from "./recommendation-store.js";

export function toApproval(row: ApprovalRow): ApprovalRequest {
  return create(ApprovalRequestSchema, {
    id: row.id,
    entityType: row.entity_type,
    entityId: row.entity_id ?? undefined,
    action: row.action,
    payload: row.payload as JsonObject,
    stages: row.stages.map((s) =>
      create(ApprovalStageSchema, {
        requiredRole: s.requiredRole,
        status: s.status,
        decidedBy: s.decidedBy ?? undefined,
        decidedByName: s.decidedByName ?? undefined,
        decidedAt: s.decidedAt ? timestampFromDate(new Date(s.decidedAt)) : undefined,
        comment: s.comment,
      }),
    ),
    status: row.status,
    comment: row.comment,
    requestedBy: row.requested_by ?? undefined,
    requestedByName: row.requested_by_name,
    resolvedAt: row.resolved_at ? timestampFromDate(row.resolved_at) : undefined,
    consumedAt: row.consumed_at ? timestampFromDate(row.consumed_at) : undefined,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

export function toRecommendation(row: RecommendationRow): AiRecommendation {
  return create(AiRecommendationSchema, {
    id: row.id,
    entityType: row.entity_type,
    entityId: row.entity_id,
    patch: row.patch as JsonObject,
    rationale: row.rationale,
    status: row.status,
    appliedAt: row.applied_at ? timestampFromDate(row.applied_at) : undefined,
    createdByName: row.created_by_name,
    createdAt: timestampFromDate(row.created_at),
    updatedAt: timestampFromDate(row.updated_at),
  });
}

/** Audit snapshots are the record as the API shows it. */
export const approvalSnapshot = (row: ApprovalRow) => ({
  entityType: row.entity_type,
  entityId: row.entity_id,
  action: row.action,
  status: row.status,
  stages: row.stages,
  payload: row.payload,
});

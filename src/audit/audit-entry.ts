import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/** An audit_log row as stored. */
export interface AuditRow {
  tenant_id: string;
  id: string;
  seq: string;
  action: string;
  entity_type: string;
  entity_id: string;
  entity_name: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  entity_version: number | null;
  changes: Record<string, unknown>;
  user_id: string | null;
  user_name: string;
  request_id: string | null;
  timestamp: Date;
  integrity_hash: string;
  prev_hash: string | null;
}

/** Every action the log records: configuration writes plus the change-feed actions of spec 2.6. */
export const AUDIT_ACTIONS = [
  "create",
  "update",
  "soft_delete",
  "restore",
  "delete",
  "mandatory_override",
  "publish",
  "rollback",
  "approve",
  "reject",
  "gdpr_erasure",
  // A decision explanation was produced (SHAP values, a regulator narrative): docs/explanations.md.
  "explain",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * The stored actions an export's `action` filter finds. The spec's export filter offers only
 * create, update and delete, so there `delete` means every deletion: soft deletes (how every
 * catalog deletion is stored) as well as hard ones (a workspace reset). The change feed lists
 * `delete` and `soft_delete` as values of their own and matches each exactly.
 */
export function exportActionsMatching(filter: string): AuditAction[] {
  return filter === "delete" ? ["delete", "soft_delete"] : [filter as AuditAction];
}

/**
 * The entry as the API and the exports show it (spec 2.6): camelCase, null where unset, the
 * timestamp as `toISOString()` (always three fractional digits). The JSON export writes exactly this,
 * so an auditor can recompute every hash from an export alone (docs/audit.md).
 */
export function entryJson(row: Omit<AuditRow, "seq">) {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    action: row.action,
    entityType: row.entity_type,
    entityId: row.entity_id,
    entityName: row.entity_name,
    before: row.before,
    after: row.after,
    entityVersion: row.entity_version,
    changes: row.changes,
    userId: row.user_id,
    userName: row.user_name,
    requestId: row.request_id,
    timestamp: row.timestamp.toISOString(),
    prevHash: row.prev_hash,
    integrityHash: row.integrity_hash,
  };
}

export type AuditEntryJson = ReturnType<typeof entryJson>;

/**
 * integrityHash = hex SHA-256 of the RFC 8785 (JCS) serialization of every field of `entryJson`
 * except integrityHash itself, prevHash included: editing any field of an entry, or relinking it,
 * changes its hash.
 */
export function integrityHash(row: Omit<AuditRow, "seq">): string {
  const { integrityHash: _, ...hashed } = entryJson(row);
  return createHash("sha256").update(canonicalize(hashed)!, "utf8").digest("hex");
}

import { changedFields } from "./change-summary.js";
import { entryJson, type AuditRow } from "./audit-entry.js";

const CSV_COLUMNS = [
  "id", "timestamp", "action", "entityType", "entityId", "entityName", "entityVersion", "userId", "userName",
  "requestId", "changes", "before", "after", "prevHash", "integrityHash", "tenantId",
] as const;

/**
 * RFC 4180 quoting. Cells a spreadsheet would run as a formula get a leading apostrophe (OWASP CSV
 * injection advice); the JSON export is the one to recompute hashes from.
 */
function csvCell(value: unknown): string {
  let s = value === null || value === undefined ? "" : typeof value === "object" ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n']/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function auditCsv(rows: AuditRow[]): string {
  const lines = [CSV_COLUMNS.join(",")];
  for (const row of rows) {
    const e = entryJson(row);
    lines.push(CSV_COLUMNS.map((c) => csvCell(e[c])).join(","));
  }
  return lines.join("\r\n") + "\r\n";
}

function countBy(rows: AuditRow[], key: (r: AuditRow) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rows) out[key(r)] = (out[key(r)] ?? 0) + 1;
  return out;
}

/**
 * The soc2 format (docs/audit.md): what an auditor samples for change management — the period, the
 * chain verification over it, counts by action, entity type and actor, and per entry who changed
 * what, when, under which request, with the hashes that tie it to the chain.
 */
export function auditSoc2(
  rows: AuditRow[],
  meta: { tenantId: string; startDate: string | null; endDate: string | null; total: number; limit: number; offset: number },
  integrity: Record<string, unknown>,
) {
  return {
    format: "soc2",
    generatedAt: new Date().toISOString(),
    tenantId: meta.tenantId,
    period: { startDate: meta.startDate, endDate: meta.endDate },
    integrity,
    summary: {
      totalEntries: meta.total,
      exportedEntries: rows.length,
      limit: meta.limit,
      offset: meta.offset,
      byAction: countBy(rows, (r) => r.action),
      byEntityType: countBy(rows, (r) => r.entity_type),
      byActor: countBy(rows, (r) => r.user_name),
    },
    entries: rows.map((r) => ({
      id: r.id,
      timestamp: r.timestamp.toISOString(),
      actor: { id: r.user_id, name: r.user_name },
      action: r.action,
      entityType: r.entity_type,
      entityId: r.entity_id,
      entityName: r.entity_name,
      entityVersion: r.entity_version,
      changedFields: changedFields(r.before, r.after),
      changes: r.changes,
      requestId: r.request_id,
      prevHash: r.prev_hash,
      integrityHash: r.integrity_hash,
    })),
  };
}

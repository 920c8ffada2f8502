import type { AuditRow } from "./audit-entry.js";

const NOUNS: Record<string, string> = { sub_category: "sub-category", outcome_type: "outcome type" };

/** Snapshot keys that change on every write and say nothing about what the user changed. */
const BOOKKEEPING = new Set(["version", "updatedAt", "createdAt", "deletedAt"]);

/** Top-level snapshot fields whose values differ between before and after, in snapshot order. */
export function changedFields(before: Record<string, unknown> | null, after: Record<string, unknown> | null): string[] {
  if (!before || !after) return [];
  const keys = [...new Set([...Object.keys(after), ...Object.keys(before)])];
  return keys.filter((k) => !BOOKKEEPING.has(k) && JSON.stringify(before[k]) !== JSON.stringify(after[k]));
}

const text = (v: unknown) => (v === undefined || v === null ? "" : String(v));

/** The one-line `summary` of a change-history entry (spec 2.7), derived from the audit entry alone. */
export function changeSummary(row: AuditRow): string {
  const noun = NOUNS[row.entity_type] ?? row.entity_type.replace(/_/g, " ");
  const what = row.entity_name ? `${noun} "${row.entity_name}"` : `${noun} ${row.entity_id}`;
  const c = row.changes ?? {};
  const reason = c.reason ? ` (${text(c.reason)})` : "";
  switch (row.action) {
    case "create":
      return `Created ${what}`;
    case "update": {
      const fields = changedFields(row.before, row.after);
      return fields.length ? `Updated ${what}: ${fields.join(", ")}` : `Updated ${what}`;
    }
    case "soft_delete":
      return `Deleted ${what}${reason}`;
    case "delete":
      return `Permanently deleted ${what}${reason}`;
    case "restore":
      return `Restored ${what}`;
    case "mandatory_override":
      return `Made ${what} mandatory until ${text(c.expiresAt)}${reason}`;
    // Entries are immutable (hash chain): content items' publish and revert entries written before
    // they carried spec 2.7's fields (`{workflow}`, `{revertedTo}`) are summarized from the entry's
    // version and snapshot instead, so that no summary has a blank.
    case "publish":
      return `Published ${what} version ${text(c.version ?? row.entity_version)}`;
    case "rollback":
      return `Rolled back ${what} from version ${text(c.fromVersion ?? row.before?.version)} to ${text(c.toVersion ?? c.revertedTo)} (new version ${text(c.newVersion ?? row.entity_version)})`;
    case "approve":
      return `Approved ${what}`;
    case "reject":
      return `Rejected ${what}${reason}`;
    case "gdpr_erasure":
      return `Erased the personal data of ${what}`;
    case "explain":
      return `Explained ${what}: ${text(c.explanation)}${c.mode ? ` for a ${text(c.mode)}` : ""}`;
    default:
      return `${row.action} ${what}`;
  }
}

import { test } from "node:test";
import assert from "node:assert/strict";
import type { AuditRow } from "../../src/audit/audit-entry.js";
import { changeSummary } from "../../src/audit/change-summary.js";

/** A stored content item entry with the given action, changes and versions. */
function entry(action: string, changes: Record<string, unknown>, entityVersion: number, beforeVersion: number | null): AuditRow {
  return {
    tenant_id: "t",
    id: "e",
    seq: "1",
    action,
    entity_type: "content_item",
    entity_id: "c",
    entity_name: "Banner",
    before: beforeVersion === null ? null : { version: beforeVersion },
    after: { version: entityVersion },
    entity_version: entityVersion,
    changes,
    user_id: null,
    user_name: "system",
    request_id: null,
    timestamp: new Date(0),
    integrity_hash: "h",
    prev_hash: null,
  };
}

test("spec 2.7 summaries of publish and rollback name their versions", () => {
  assert.equal(changeSummary(entry("publish", { version: 2, notes: "" }, 2, 1)), `Published content item "Banner" version 2`);
  assert.equal(
    changeSummary(entry("rollback", { fromVersion: 3, toVersion: 1, newVersion: 4, notes: "" }, 4, 3)),
    `Rolled back content item "Banner" from version 3 to 1 (new version 4)`,
  );
});

test("content entries written before spec 2.7's fields are summarized from the entry itself, without blanks", () => {
  const publish = entry("publish", { workflow: { move: "publish", from: "approved", to: "published" } }, 2, 1);
  assert.equal(changeSummary(publish), `Published content item "Banner" version 2`);
  assert.equal(changeSummary(entry("rollback", { revertedTo: 1 }, 4, 3)), `Rolled back content item "Banner" from version 3 to 1 (new version 4)`);
});

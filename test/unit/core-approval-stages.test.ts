import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { decideStage, initialStages, type Decider } from "../../src/core/index.js";

const at = new Date("2026-01-01T00:00:00Z");
const who = (id: string, role: Decider["role"]): Decider => ({ id, name: id, role });

describe("approval stages (docs/approvals.md#stage-statuses)", () => {
  test("a new request opens its first stage and keeps the rest waiting", () => {
    assert.deepEqual(initialStages(["editor", "admin", "admin"]).map((s) => s.status), ["pending", "waiting", "waiting"]);
  });

  test("approvals walk the stages in order; the last one approves the request", () => {
    const first = decideStage(initialStages(["editor", "admin"]), "requester", who("e1", "editor"), "approve", "ok", at);
    assert.ok(first.ok);
    assert.equal(first.status, "pending");
    assert.deepEqual(first.stages.map((s) => [s.status, s.decidedBy]), [["approved", "e1"], ["pending", null]]);
    const last = decideStage(first.stages, "requester", who("a1", "admin"), "approve", "", at);
    assert.ok(last.ok);
    assert.equal(last.status, "approved");
    assert.equal(last.stages[1].decidedAt, at.toISOString());
  });

  test("refusals: self-approval, a second stage by the same person, a role below the stage's", () => {
    const cases: Array<[string, Parameters<typeof decideStage>, string]> = [
      ["self", [initialStages(["admin"]), "a1", who("a1", "admin"), "approve", "", at], "SELF_APPROVAL"],
      ["role", [initialStages(["admin"]), "r", who("e1", "editor"), "approve", "", at], "STAGE_ROLE_REQUIRED"],
    ];
    const once = decideStage(initialStages(["editor", "editor"]), "r", who("e1", "editor"), "approve", "", at);
    assert.ok(once.ok);
    cases.push(["duplicate", [once.stages, "r", who("e1", "editor"), "approve", "", at], "DUPLICATE_APPROVER"]);
    for (const [name, args, reason] of cases) {
      const outcome = decideStage(...args);
      assert.equal(outcome.ok ? null : outcome.reason, reason, name);
    }
  });

  test("a rejection closes the request, leaving later stages waiting; the requester may withdraw", () => {
    const rejected = decideStage(initialStages(["editor", "admin"]), "e1", who("e1", "editor"), "reject", "withdrawn", at);
    assert.ok(rejected.ok);
    assert.equal(rejected.status, "rejected");
    assert.deepEqual(rejected.stages.map((s) => s.status), ["rejected", "waiting"]);
  });
});

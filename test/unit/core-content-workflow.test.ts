import { test } from "node:test";
import assert from "node:assert/strict";
import { CONTENT_STATES, contentMoveRefusal, editedSinceReview, type ContentMove } from "../../src/core/index.js";

/** Spec 3.2: each move is allowed from exactly one state. */
const FROM: Record<ContentMove, string> = { submit: "draft", approve: "in_review", reject: "in_review", publish: "approved" };

test("each workflow move is allowed from its one state and refused, with the reason, from every other", () => {
  for (const [move, from] of Object.entries(FROM) as Array<[ContentMove, string]>) {
    for (const state of CONTENT_STATES) {
      const refusal = contentMoveRefusal(move, state);
      if (state === from) assert.equal(refusal, null, `${move} from ${state}`);
      else assert.match(refusal!, new RegExp(`^cannot ${move} a ${state} content item(;| without changes since its review;) it must be ${from}`));
    }
  }
});

test("an approved or published item edited after its review may be submitted again; unedited it may not", () => {
  for (const status of ["approved", "published"] as const) {
    assert.equal(contentMoveRefusal("submit", status, true), null);
    assert.equal(
      contentMoveRefusal("submit", status, false),
      `cannot submit a ${status} content item without changes since its review; it must be draft, or ${status} with a newer version than the one reviewed`,
    );
  }
  for (const status of ["in_review", "archived"] as const) assert.match(contentMoveRefusal("submit", status, true)!, /it must be draft$/);
  assert.match(contentMoveRefusal("publish", "published", true)!, /it must be approved$/);
  const item = { version: 4, approvedVersion: 3, publishedVersion: 2 };
  assert.equal(editedSinceReview({ ...item, status: "approved" }), true);
  assert.equal(editedSinceReview({ ...item, status: "approved", approvedVersion: 4 }), false);
  assert.equal(editedSinceReview({ ...item, status: "published" }), true);
  assert.equal(editedSinceReview({ ...item, status: "published", publishedVersion: 4 }), false);
  assert.equal(editedSinceReview({ ...item, status: "draft" }), false);
});

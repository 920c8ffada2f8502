import { test } from "node:test";
import assert from "node:assert/strict";
import { CONTENT_STATES, contentMoveRefusal, type ContentMove } from "../../src/core/index.js";

/** Spec 3.2: each move is allowed from exactly one state. */
const FROM: Record<ContentMove, string> = { submit: "draft", approve: "in_review", reject: "in_review", publish: "approved" };

test("each workflow move is allowed from its one state and refused, with the reason, from every other", () => {
  for (const [move, from] of Object.entries(FROM) as Array<[ContentMove, string]>) {
    for (const state of CONTENT_STATES) {
      const refusal = contentMoveRefusal(move, state);
      if (state === from) assert.equal(refusal, null, `${move} from ${state}`);
      else assert.equal(refusal, `cannot ${move} a ${state} content item; it must be ${from}`);
    }
  }
});

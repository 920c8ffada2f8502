import { test } from "node:test";
import assert from "node:assert/strict";
import { createMemorySignInAttempts, ATTEMPT_TTL_SECONDS } from "../../src/sso/sign-in-attempts.js";

test("in-memory sign-in attempts: stored once, taken once, gone after their lifetime", async () => {
  let now = 0;
  const attempts = createMemorySignInAttempts(() => now);
  assert.equal(await attempts.put("k", { a: 1 }), true);
  assert.equal(await attempts.put("k", { a: 2 }), false, "a pending key is not overwritten");
  assert.deepEqual(await attempts.take("k"), { a: 1 });
  assert.equal(await attempts.take("k"), null, "single use");
  await attempts.put("old", { a: 3 });
  now += ATTEMPT_TTL_SECONDS * 1000;
  assert.equal(await attempts.take("old"), null, "expired");
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { ASSIGNMENT_TTL_SECONDS, createMemoryVariantAssignments } from "../../src/experiments/variant-assignments.js";

test("the single-node stand-in keeps a variant for 30 days, replaces one the experiment lost, and forgets a reset tenant", async () => {
  let clock = 1_000_000;
  const store = createMemoryVariantAssignments(() => clock);
  const variants = ["__holdout__", "__champion__", "b"];
  assert.equal(await store.keep("t1", "e1", "c1", "__champion__", variants), "__champion__");
  assert.equal(await store.keep("t1", "e1", "c1", "b", variants), "__champion__", "kept although the split now says b");
  assert.equal(await store.keep("t2", "e1", "c1", "b", variants), "b", "per tenant");
  assert.equal(await store.keep("t1", "e1", "c1", "b", ["__holdout__", "b"]), "b", "a variant the experiment no longer has is replaced");
  clock += ASSIGNMENT_TTL_SECONDS * 1000 - 1;
  assert.equal(await store.keep("t1", "e1", "c1", "__holdout__", variants), "b", "still within 30 days of the assignment");
  clock += 1;
  assert.equal(await store.keep("t1", "e1", "c1", "__holdout__", variants), "__holdout__", "expired: assigned afresh");
  assert.equal(await store.keep("t2", "e1", "c2", "b", variants), "b");
  await store.resetTenant("t1");
  assert.equal(await store.keep("t1", "e1", "c1", "__champion__", variants), "__champion__");
  assert.equal(await store.keep("t2", "e1", "c2", "__champion__", variants), "b", "another tenant's reset leaves t2 alone");
});

test("peek reads the kept variant without keeping one, and not past its 30 days", async () => {
  let clock = 1_000_000;
  const store = createMemoryVariantAssignments(() => clock);
  assert.equal(await store.peek("t1", "e1", "c1"), null);
  assert.equal(await store.count("t1", "c1", ["e1"]), 0, "peeking kept nothing");
  await store.keep("t1", "e1", "c1", "b", ["b"]);
  assert.equal(await store.peek("t1", "e1", "c1"), "b");
  assert.equal(await store.peek("t2", "e1", "c1"), null, "per tenant");
  clock += ASSIGNMENT_TTL_SECONDS * 1000;
  assert.equal(await store.peek("t1", "e1", "c1"), null);
});

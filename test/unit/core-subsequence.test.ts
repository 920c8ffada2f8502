import { test } from "node:test";
import assert from "node:assert/strict";
import { createRandom } from "../../src/core/index.js";
import { Subsequence } from "../../src/core/subsequence.js";

test("a subsequence that drops nothing is its source, the same array", () => {
  const source = ["a", "b", "c"];
  const kept = new Subsequence(source);
  source.forEach((_, i) => kept.keep(i));
  assert.equal(kept.result(), source);
});

test("a subsequence is what a filter keeps, in order, whatever is dropped where, and its column stays beside it", () => {
  const random = createRandom("subsequence");
  for (let round = 0; round < 200; round++) {
    const source = Array.from({ length: Math.floor(random() * 12) }, (_, i) => `o${i}`);
    const keep = source.map(() => random() < 0.6);
    const kept = new Subsequence<string, number>(source);
    keep.forEach((k, i) => (k ? kept.keep(i, i * 10) : kept.drop(i)));
    assert.deepEqual(kept.result(), source.filter((_, i) => keep[i]), `round ${round}: ${keep.join(",")}`);
    assert.deepEqual(kept.column(), source.flatMap((_, i) => (keep[i] ? [i * 10] : [])), `round ${round}: the column beside the kept`);
    assert.deepEqual(source, Array.from({ length: source.length }, (_, i) => `o${i}`), "the source is left as it was");
  }
});

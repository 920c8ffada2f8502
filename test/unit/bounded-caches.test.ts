import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { setNewest } from "../../src/core/bounded-map.js";
import { TtlCache } from "../../src/platform/ttl-cache.js";

describe("bounded caches (setNewest)", () => {
  test("keeps at most max entries, dropping the least recently set; setting a kept key again makes it the newest", () => {
    const map = new Map<string, number>();
    for (const [i, key] of ["a", "b", "c"].entries()) setNewest(map, key, i, 3);
    setNewest(map, "a", 10, 3); // a is now the newest, b the oldest
    setNewest(map, "d", 3, 3);
    assert.deepEqual([...map], [["c", 2], ["a", 10], ["d", 3]]);
    setNewest(map, "e", 4, 2); // a smaller bound drops down to it at once
    assert.deepEqual([...map.keys()], ["d", "e"]);
  });

  test("TtlCache: bounded by maxEntries, a reload becomes the newest, peek answers only fresh values", async () => {
    let now = 0;
    const cache = new TtlCache<string>(1_000, 2, () => now);
    await cache.get("a", async () => "A1");
    await cache.get("b", async () => "B");
    now = 1_500; // both expired: a reload of a keeps b as the older one
    assert.equal(cache.peek("a"), undefined);
    assert.equal(await cache.get("a", async () => "A2"), "A2");
    assert.equal(cache.peek("a"), "A2");
    await cache.get("c", async () => "C"); // the third entry drops b, the least recently set
    assert.equal(await cache.get("b", async () => "B2"), "B2", "b was dropped and loaded again");
    assert.equal(cache.peek("a"), undefined, "then a, the oldest of a and c, made room for b");
    assert.equal(cache.peek("c"), "C");
  });
});

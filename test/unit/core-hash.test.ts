import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { canonicalJson, fingerprint, fnv1a32, fnv1a64, hashFraction } from "../../src/core/index.js";

describe("FNV-1a", () => {
  // Reference vectors from the FNV authors' test suite.
  const vectors: Array<[string, number, string]> = [
    ["", 0x811c9dc5, "cbf29ce484222325"],
    ["a", 0xe40c292c, "af63dc4c8601ec8c"],
    ["foobar", 0xbf9cf968, "85944171f73967e8"],
  ];
  for (const [text, h32, h64] of vectors) {
    test(`"${text}"`, () => {
      assert.equal(fnv1a32(text), h32);
      assert.equal(fnv1a64(text), h64);
    });
  }

  test("hashes UTF-8 bytes, not UTF-16 code units", () => {
    assert.notEqual(fnv1a64("é"), fnv1a64("e"));
    assert.equal(fnv1a32("é"), fnv1a32("\u00e9"));
  });

  test("hashFraction lies in [0, 1) and is stable", () => {
    const f = hashFraction("offer:customer");
    assert.ok(f >= 0 && f < 1);
    assert.equal(hashFraction("offer:customer"), f);
  });
});

describe("canonical JSON and fingerprints", () => {
  test("key order does not matter, undefined members vanish, non-finite numbers are null", () => {
    assert.equal(canonicalJson({ b: 1, a: [1, { d: undefined, c: "x" }], e: Number.NaN }), '{"a":[1,{"c":"x"}],"b":1,"e":null}');
    assert.equal(fingerprint({ x: 1, y: 2 }), fingerprint({ y: 2, x: 1 }));
    assert.notEqual(fingerprint({ x: 1, y: 2 }), fingerprint({ x: 1, y: 3 }));
    assert.match(fingerprint({}), /^[0-9a-f]{16}$/);
  });
});

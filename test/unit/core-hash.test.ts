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

  test("keys sort by code unit at every depth, integer-like keys included", () => {
    // Objects enumerate "10" before "9" and both before "a"; code-unit order puts "10" < "9" < "a".
    assert.equal(canonicalJson({ a: 1, 9: 2, 10: 3, "-1": 4 }), '{"-1":4,"10":3,"9":2,"a":1}');
    assert.equal(canonicalJson([{ z: { y: 1, x: [null, undefined, Infinity] }, b: true }]), '[{"b":true,"z":{"x":[null,null,null],"y":1}}]');
    assert.equal(canonicalJson({ nested: { 2: "two", 1: "one", b: { d: 1, c: 2 } } }), '{"nested":{"1":"one","2":"two","b":{"c":2,"d":1}}}');
    assert.equal(canonicalJson(undefined), "null");
    assert.equal(canonicalJson("é\n"), JSON.stringify("é\n"));
    const a = { customer: { age: 3, income: 2 }, evidence: [[1, 2], null, [0, 5]], counters: {} };
    const b = { evidence: [[1, 2], null, [0, 5]], counters: {}, customer: { income: 2, age: 3 } };
    assert.equal(canonicalJson(a), canonicalJson(b));
    assert.equal(canonicalJson(a), '{"counters":{},"customer":{"age":3,"income":2},"evidence":[[1,2],null,[0,5]]}');
  });
});

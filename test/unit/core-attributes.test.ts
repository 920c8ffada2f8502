import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mergeAttributes, resolveAttribute } from "../../src/core/index.js";

describe("mergeAttributes", () => {
  test("gives what a spread of the bags gives: every member, a later bag's value winning, in spread order", () => {
    const stored = { tier: "gold", age: 30, 2: "two" };
    const sent = { age: 34, visits: 5, 1: "one" };
    const merged = mergeAttributes<unknown>(stored, sent);
    assert.deepEqual(merged, { ...stored, ...sent });
    assert.deepEqual(Object.keys(merged), Object.keys({ ...stored, ...sent }));
    assert.equal(merged.age, 34);
  });

  test("copies: writing to the result leaves the bags as they were", () => {
    const stored = { tier: "gold" };
    const sent = { age: 34 };
    const merged = mergeAttributes<unknown>(stored, sent);
    merged.tier = "silver";
    assert.deepEqual(stored, { tier: "gold" });
    assert.deepEqual(sent, { age: 34 });
  });

  test("an own __proto__ member stays a member, as with a spread, and never becomes the prototype", () => {
    const hostile = JSON.parse('{"__proto__": {"tier": "platinum"}, "age": 34}') as Record<string, unknown>;
    const merged = mergeAttributes<unknown>({ tier: "gold" }, hostile);
    assert.equal(Object.getPrototypeOf(merged), Object.prototype);
    assert.deepEqual(Object.keys(merged), ["tier", "__proto__", "age"]);
    assert.deepEqual(Object.getOwnPropertyDescriptor(merged, "__proto__")?.value, { tier: "platinum" });
    // Lookups read the bag's own members: the hostile member changes nothing a condition reads.
    assert.equal(resolveAttribute({ customer: merged, context: {} }, "tier"), "gold");
  });

  test("no bags, or empty ones, give an empty bag", () => {
    assert.deepEqual(mergeAttributes(), {});
    assert.deepEqual(mergeAttributes({}, {}), {});
  });
});

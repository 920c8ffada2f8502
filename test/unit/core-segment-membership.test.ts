import { test } from "node:test";
import assert from "node:assert/strict";
import { segmentMemberships, type SegmentDefinition } from "../../src/core/index.js";

const segments: SegmentDefinition[] = [
  { id: "s1", name: "Dutch", condition: { attribute: "country", op: "eq", value: "NL" }, definedAt: 1_000 },
  { id: "s2", name: "Adults", condition: { attribute: "age", op: "gte", value: 18 }, definedAt: 5_000 },
  { id: "s3", name: "Has income", condition: { attribute: "income", op: "gt", value: 0 }, definedAt: 0 },
  { id: "s4", name: "Not Dutch", condition: { not: { attribute: "country", op: "eq", value: "NL" } }, definedAt: 0 },
];

test("a customer is a member of the segments whose condition the attributes match, since the later of the two writes", () => {
  assert.deepEqual(segmentMemberships(segments, { country: "NL", age: 30 }, 3_000, 10_000), [
    { segmentId: "s1", segmentName: "Dutch", memberSince: 3_000 },
    { segmentId: "s2", segmentName: "Adults", memberSince: 5_000 },
  ]);
});

test("a condition over a missing attribute makes no member, negated or not", () => {
  assert.deepEqual(segmentMemberships(segments, { age: 12 }, 0, 10_000), []);
  assert.deepEqual(segmentMemberships(segments, { country: "BE" }, 7, 10_000).map((m) => m.segmentId), ["s4"]);
});

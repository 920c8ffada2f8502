import { test } from "node:test";
import assert from "node:assert/strict";
import { alertVerdict, crossesThreshold, statusAfterDelivery, type AlertOperator } from "../../src/core/index.js";

test("crossesThreshold compares by operator; a window without data never triggers", () => {
  const cases: Array<[AlertOperator, number | null, number, boolean]> = [
    ["gt", 0.6, 0.5, true],
    ["gt", 0.5, 0.5, false],
    ["gte", 0.5, 0.5, true],
    ["lt", 0.4, 0.5, true],
    ["lt", 0.5, 0.5, false],
    ["lte", 0.5, 0.5, true],
    ["eq", 1 / 3, 0.3333333333333333, true],
    ["eq", 0.1 + 0.2, 0.3, true],
    ["eq", 0.31, 0.3, false],
    ["lt", null, 0.5, false],
    ["gte", Number.NaN, 0, false],
    ["gt", 0, -1, true],
  ];
  for (const [op, value, threshold, expected] of cases) assert.equal(crossesThreshold(op, value, threshold), expected, `${value} ${op} ${threshold}`);
});

test("alertVerdict follows spec 3.6: unsupported, ok, cooldown, or dispatch", () => {
  const at = new Date("2026-01-01T12:00:00Z");
  const base = { recognized: true, triggered: true, lastFiredAt: null, cooldownMinutes: 60, at };
  assert.deepEqual(alertVerdict({ ...base, recognized: false }), { status: "unsupported_metric" });
  assert.deepEqual(alertVerdict({ ...base, triggered: false, lastFiredAt: new Date(at.getTime() - 60_000) }), { status: "ok" });
  assert.deepEqual(alertVerdict(base), { dispatch: true });
  assert.deepEqual(alertVerdict({ ...base, lastFiredAt: new Date(at.getTime() - 59 * 60_000) }), { status: "cooldown" });
  assert.deepEqual(alertVerdict({ ...base, lastFiredAt: new Date(at.getTime() - 60 * 60_000) }), { dispatch: true }, "the cooldown ends at cooldownMinutes");
  assert.deepEqual(alertVerdict({ ...base, cooldownMinutes: 0, lastFiredAt: at }), { dispatch: true });
});

test("statusAfterDelivery: fired when any destination accepted, delivery_failed when none did", () => {
  assert.equal(statusAfterDelivery([false, true]), "fired");
  assert.equal(statusAfterDelivery([false, false]), "delivery_failed");
  assert.equal(statusAfterDelivery([]), "delivery_failed");
});

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { evaluateCondition, matchCondition, qualify, validateCondition, type Condition, type Offer } from "../../src/core/index.js";

const NOW = Date.parse("2024-06-01T12:00:00Z");
const bag = {
  customer: {
    age: 34,
    ageText: "34",
    tier: "gold",
    tags: ["vip", "mobile"],
    email: "ann@example.com",
    optedIn: true,
    nothing: null,
    signupAt: "2024-05-20T00:00:00Z",
    lastPurchaseAt: "2023-01-01T00:00:00Z",
    address: { city: "Lyon" },
  },
  context: { channel: "email", hour: 9, tier: "silver" },
};

describe("condition operators", () => {
  const cases: Array<[string, Condition, boolean]> = [
    ["eq string", { attribute: "tier", op: "eq", value: "gold" }, true],
    ["eq is case-sensitive", { attribute: "tier", op: "eq", value: "Gold" }, false],
    ["eq number vs numeric string", { attribute: "ageText", op: "eq", value: 34 }, true],
    ["eq boolean", { attribute: "optedIn", op: "eq", value: true }, true],
    ["neq", { attribute: "tier", op: "neq", value: "silver" }, true],
    ["neq equal value", { attribute: "tier", op: "neq", value: "gold" }, false],
    ["gt", { attribute: "age", op: "gt", value: 33 }, true],
    ["gt equal", { attribute: "age", op: "gt", value: 34 }, false],
    ["gte equal", { attribute: "age", op: "gte", value: 34 }, true],
    ["lt", { attribute: "age", op: "lt", value: 35 }, true],
    ["lt equal", { attribute: "age", op: "lt", value: 34 }, false],
    ["lte equal", { attribute: "age", op: "lte", value: 34 }, true],
    ["gt numeric string attribute", { attribute: "ageText", op: "gt", value: 30 }, true],
    ["gt on non-numeric attribute is false", { attribute: "tier", op: "gt", value: 1 }, false],
    ["in", { attribute: "tier", op: "in", value: ["silver", "gold"] }, true],
    ["in miss", { attribute: "tier", op: "in", value: ["silver", "bronze"] }, false],
    ["in with array attribute overlaps", { attribute: "tags", op: "in", value: ["vip", "x"] }, true],
    ["not_in", { attribute: "tier", op: "not_in", value: ["silver"] }, true],
    ["not_in hit", { attribute: "tier", op: "not_in", value: ["gold"] }, false],
    ["contains substring", { attribute: "email", op: "contains", value: "@example." }, true],
    ["contains array element", { attribute: "tags", op: "contains", value: "mobile" }, true],
    ["contains miss", { attribute: "tags", op: "contains", value: "desktop" }, false],
    ["exists", { attribute: "tier", op: "exists" }, true],
    ["exists on null is false", { attribute: "nothing", op: "exists" }, false],
    ["not_exists on absent", { attribute: "nope", op: "not_exists" }, true],
    ["not_exists on present", { attribute: "tier", op: "not_exists" }, false],
    ["between inclusive low", { attribute: "age", op: "between", value: [34, 40] }, true],
    ["between inclusive high", { attribute: "age", op: "between", value: [18, 34] }, true],
    ["between outside", { attribute: "age", op: "between", value: [35, 40] }, false],
    ["before ISO", { attribute: "lastPurchaseAt", op: "before", value: "2023-06-01T00:00:00Z" }, true],
    ["after ISO", { attribute: "lastPurchaseAt", op: "after", value: "2023-06-01T00:00:00Z" }, false],
    ["after now is false for a past date", { attribute: "signupAt", op: "after", value: "now" }, false],
    ["before now", { attribute: "signupAt", op: "before", value: "now" }, true],
    ["after daysAgo 30 (signed up 12 days ago)", { attribute: "signupAt", op: "after", value: { daysAgo: 30 } }, true],
    ["after daysAgo 7", { attribute: "signupAt", op: "after", value: { daysAgo: 7 } }, false],
    ["before daysFromNow", { attribute: "signupAt", op: "before", value: { daysFromNow: 1 } }, true],
    ["before on a non-date attribute is false", { attribute: "tier", op: "before", value: "now" }, false],
    ["dotted customer path", { attribute: "customer.address.city", op: "eq", value: "Lyon" }, true],
    ["bare path prefers the customer", { attribute: "tier", op: "eq", value: "gold" }, true],
    ["context path", { attribute: "context.tier", op: "eq", value: "silver" }, true],
    ["bare path falls back to context", { attribute: "hour", op: "lt", value: 10 }, true],
    ["empty condition always holds", {}, true],
  ];
  for (const [name, condition, expected] of cases) {
    test(name, () => {
      assert.deepEqual(matchCondition(condition, bag, NOW), { value: expected });
    });
  }
});

describe("combinators and missing attributes", () => {
  const missing: Condition = { attribute: "customer.income", op: "gt", value: 1000 };
  const yes: Condition = { attribute: "tier", op: "eq", value: "gold" };
  const no: Condition = { attribute: "tier", op: "eq", value: "silver" };
  const cases: Array<[string, Condition, boolean | null]> = [
    ["all true", { all: [yes, yes] }, true],
    ["all with a false", { all: [yes, no] }, false],
    ["all false beats unknown", { all: [missing, no] }, false],
    ["all unknown and true is unknown", { all: [missing, yes] }, null],
    ["any with a true", { any: [no, yes] }, true],
    ["any true beats unknown", { any: [missing, yes] }, true],
    ["any unknown and false is unknown", { any: [missing, no] }, null],
    ["not true", { not: yes }, false],
    ["not keeps unknown", { not: missing }, null],
    ["neq on missing is unknown, not true", { attribute: "nope", op: "neq", value: "x" }, null],
    ["null attribute is missing", { attribute: "nothing", op: "eq", value: 1 }, null],
  ];
  for (const [name, condition, expected] of cases) {
    test(name, () => {
      const match = matchCondition(condition, bag, NOW);
      assert.equal(match.value, expected);
      if (expected === null) assert.ok(match.attribute, "an unknown result names the missing attribute");
    });
  }

  test("onMissing skip passes with skipped, warning and attribute", () => {
    assert.deepEqual(evaluateCondition({ all: [missing, yes] }, bag, "skip", NOW), {
      passed: true,
      skipped: true,
      warning: "attribute customer.income is missing; condition skipped (onMissing=skip)",
      attribute: "customer.income",
    });
  });

  test("onMissing block fails and names the attribute", () => {
    assert.deepEqual(evaluateCondition(missing, bag, "block", NOW), { passed: false, attribute: "customer.income" });
  });

  test("an operator that slipped past validation never matches", () => {
    assert.deepEqual(matchCondition({ attribute: "tier", op: "like" as "eq", value: "gold" }, bag, NOW), { value: false });
  });

  test("a decided condition ignores onMissing", () => {
    assert.deepEqual(evaluateCondition({ any: [missing, yes] }, bag, "block", NOW), { passed: true });
    assert.deepEqual(evaluateCondition(no, bag, "skip", NOW), { passed: false });
  });
});

describe("validateCondition", () => {
  const cases: Array<[string, unknown, string[]]> = [
    ["empty object is valid", {}, []],
    ["nested valid", { all: [{ attribute: "age", op: "gte", value: 18 }, { not: { attribute: "x", op: "exists" } }] }, []],
    ["relative date is valid", { attribute: "signupAt", op: "after", value: { daysAgo: 30 } }, []],
    ["not an object", "age > 3", ["condition: must be an object"]],
    ["array", [], ["condition: must be an object"]],
    ["two kinds", { all: [], any: [] }, ["condition: must have exactly one of all, any, not or attribute"]],
    ["all not an array", { all: {} }, ["condition.all: must be an array"]],
    ["empty any", { any: [] }, ["condition.any: must not be empty"]],
    ["extra key on a combinator", { not: {}, foo: 1 }, ["condition.foo: unknown key"]],
    [
      "bad operator deep inside",
      { all: [{ attribute: "age", op: "gte", value: 1 }, { any: [{ attribute: "age", op: "greater", value: 1 }] }] },
      ["condition.all[1].any[0].op: must be one of eq, neq, gt, gte, lt, lte, in, not_in, contains, exists, not_exists, between, before, after"],
    ],
    ["bad attribute path", { attribute: "a..b", op: "exists" }, ["condition.attribute: must be a dotted attribute path such as customer.age"]],
    ["exists with a value", { attribute: "a", op: "exists", value: 1 }, ["condition.value: must be absent for exists"]],
    ["gt needs a number", { attribute: "a", op: "gt", value: "3" }, ["condition.value: must be a number"]],
    ["in needs a non-empty list", { attribute: "a", op: "in", value: [] }, ["condition.value: must be a non-empty array of strings, numbers or booleans"]],
    ["eq needs a scalar", { attribute: "a", op: "eq", value: { x: 1 } }, ["condition.value: must be a string, number or boolean"]],
    ["between order", { attribute: "a", op: "between", value: [5, 1] }, ["condition.value: must be [low, high] numbers with low <= high"]],
    [
      "before needs a date",
      { attribute: "a", op: "before", value: "yesterday" },
      ['condition.value: must be "now", an ISO 8601 instant, {"daysAgo": n} or {"daysFromNow": n} with n >= 0'],
    ],
    [
      "negative daysAgo",
      { attribute: "a", op: "after", value: { daysAgo: -1 } },
      ['condition.value: must be "now", an ISO 8601 instant, {"daysAgo": n} or {"daysFromNow": n} with n >= 0'],
    ],
    ["unknown leaf key", { attribute: "a", op: "exists", onMissing: "skip" }, ["condition.onMissing: unknown key"]],
  ];
  for (const [name, condition, expected] of cases) {
    test(name, () => assert.deepEqual(validateCondition(condition), expected));
  }

  test("the path prefix is the caller's", () => {
    assert.deepEqual(validateCondition({ not: 3 }, "config.condition"), ["config.condition.not: must be an object"]);
  });

  test("deep nesting is refused rather than overflowing", () => {
    let deep: unknown = { attribute: "a", op: "exists" };
    for (let i = 0; i < 40; i++) deep = { not: deep };
    const errors = validateCondition(deep);
    assert.equal(errors.length, 1);
    assert.match(errors[0], /nested deeper than 32 levels$/);
  });
});

describe("decisioning gates over many offers", () => {
  const offers = ["a", "b", "c"].map((id) => ({ id, name: id, status: "active", priority: 0, businessValue: 0 }) as Offer);
  const gate = { id: "adult", condition: { attribute: "customer.age", op: "gte", value: 18 } as Condition };

  test("each offer gets its own row for a gate; each request is judged on its own customer", () => {
    const adult = qualify(offers, [gate], { customer: { age: 30 }, context: {} }, 0);
    assert.deepEqual(adult.qualified.map((o) => o.id), ["a", "b", "c"]);
    assert.deepEqual(adult.results.filter((r) => r.ruleId === "adult").map((r) => [r.offerId, r.passed]), [["a", true], ["b", true], ["c", true]]);
    const minor = qualify(offers, [gate], { customer: { age: 12 }, context: {} }, 0);
    assert.deepEqual(minor.qualified, []);
    assert.deepEqual(minor.rejections.map((r) => [r.offerId, r.reason]), offers.map((o) => [o.id, "rule adult not met"]));
    const unknown = qualify(offers, [gate], { customer: {}, context: {} }, 0);
    assert.deepEqual(unknown.qualified.map((o) => o.id), ["a", "b", "c"], "onMissing defaults to skip");
    assert.ok(unknown.results.filter((r) => r.ruleId === "adult").every((r) => r.skipped === true && r.attribute === "customer.age"));
  });
});

import { test, describe } from "node:test";
import assert from "node:assert/strict";
import {
  columnValue,
  evaluateExpression,
  ExpressionError,
  globToRegExp,
  normalizeFields,
  parseExpression,
  validatePipelineIr,
  type SchemaField,
} from "../../src/core/index.js";

const ev = (formula: string, row: Record<string, unknown> = {}) => evaluateExpression(parseExpression(formula), row);

describe("transform expressions (docs/ingestion.md, Expressions)", () => {
  const cases: Array<[string, Record<string, unknown>, unknown]> = [
    ["1 + 2 * 3", {}, 7],
    ["(1 + 2) * 3", {}, 9],
    ["-a + 10 % 4", { a: "5" }, -3],
    ["price * qty", { price: "2.5", qty: 4 }, 10],
    ["a / 0", { a: 1 }, null],
    ["a + 1", { a: null }, null],
    ["a + 1", {}, null],
    ["a + 1", { a: "" }, null],
    ["coalesce(a, b, 'none')", { b: "x" }, "x"],
    ["coalesce(a, 'none')", {}, "none"],
    ["if(age >= 18, 'adult', 'minor')", { age: "17" }, "minor"],
    ["if(age >= 18, 'adult', 'minor')", { age: 30 }, "adult"],
    ["is_null(a) and not is_null(b)", { b: 1 }, true],
    ["a = 'x' or b > 2", { a: "y", b: "10" }, true],
    ["a > 2", {}, null],
    ["null or true", {}, true],
    ["null and false", {}, false],
    ["upper(trim(name)) || '!'", { name: "  ada " }, "ADA!"],
    ["concat(first, ' ', last)", { first: "Ada", last: null }, "Ada "],
    ["lower('ABC') = 'abc'", {}, true],
    ["length('héllo')", {}, 5],
    ["substr('abcdef', 2, 3)", {}, "bcd"],
    ["replace(phone, '-', '')", { phone: "555-12-34" }, "5551234"],
    ["starts_with(s, 'ab') and ends_with(s, 'yz') and contains(s, 'mm')", { s: "abmmyz" }, true],
    ["round(2.345, 2)", {}, 2.35],
    ["floor(2.7) + ceil(2.1) + abs(-1)", {}, 6],
    ["to_number('42') + 1", {}, 43],
    ["to_string(42) || 'x'", {}, "42x"],
    ["'it''s'", {}, "it's"],
    ["[first name] || '!'", { "first name": "Ada" }, "Ada!"],
    ["'10' < '9'", {}, false],
    ["'b' > 'a'", {}, true],
    ["a <> b", { a: 1, b: 2 }, true],
  ];
  for (const [formula, row, expected] of cases) {
    test(`${formula} → ${JSON.stringify(expected)}`, () => assert.deepEqual(ev(formula, row), expected));
  }

  test("formulas that do not parse say where", () => {
    for (const [formula, message] of [
      ["1 +", /ends too early/],
      ["1 + * 2", /unexpected "\*"/],
      ["(1 + 2", /expected "\)"/],
      ["unknown_fn(1)", /unknown function/],
      ["upper(1, 2)", /takes 1 arguments/],
      ["'open", /unterminated string/],
      ["a ; b", /unexpected ";"/],
      ["", /empty/],
      ["process.exit(1)", /bad number at character 8/],
    ] as const) {
      assert.throws(() => parseExpression(formula), (err: unknown) => err instanceof ExpressionError && message.test((err as Error).message), formula);
    }
    assert.throws(() => parseExpression("(".repeat(100) + "1" + ")".repeat(100)), /nests too deeply/);
  });

  test("arithmetic on text that is not a number is an error, not NaN", () => {
    assert.throws(() => ev("a * 2", { a: "abc" }), /"abc" is not a number/);
  });
});

describe("schema fields and values", () => {
  const v: Array<{ field: string; message: string }> = [];
  const [num, int, date, ts, bool, vc, json, req] = normalizeFields(
    [
      { name: "n", dataType: "numeric", precision: 5, scale: 2 },
      { name: "i", dataType: "integer" },
      { name: "d", dataType: "date" },
      { name: "t", dataType: "timestamp" },
      { name: "b", dataType: "boolean" },
      { name: "v", dataType: "varchar", length: 3 },
      { name: "j", dataType: "jsonb" },
      { name: "r", dataType: "text", isNullable: false },
    ],
    v,
  ) as SchemaField[];
  test("normalizes without violations", () => assert.deepEqual(v, []));
  const cases: Array<[SchemaField, unknown, string | null | RegExp]> = [
    [num, "123.45", "123.45"],
    [num, "1234.5", /not numeric\(5, 2\)/],
    [int, " 42 ", "42"],
    [int, "4.2", /not an integer/],
    [int, "3000000000", /in range/],
    [date, "2025-02-28", "2025-02-28"],
    [date, "2025-02-30", /not a date/],
    [ts, "2025-01-01T10:00:00Z", "2025-01-01T10:00:00Z"],
    [ts, "yesterday", /timestamp/],
    [ts, "2025-02-29 10:00:00", /timestamp/],
    [ts, "2025-04-31T10:00:00Z", /timestamp/],
    [ts, "2028-02-29T10:00:00Z", "2028-02-29T10:00:00Z"],
    [bool, "Yes", "true"],
    [bool, "maybe", /boolean/],
    [vc, "abcd", /longer than 3/],
    [json, '{"a":1}', '{"a":1}'],
    [json, "{a", /not JSON/],
    [json, { a: 1 }, '{"a":1}'],
    [int, "", null],
    [req, "", /is required/],
  ];
  for (const [field, raw, expected] of cases) {
    test(`${field.dataType} ${JSON.stringify(raw)}`, () => {
      const r = columnValue(field, raw);
      if (expected instanceof RegExp) assert.ok(!r.ok && expected.test(r.message), JSON.stringify(r));
      else assert.deepEqual(r, { ok: true, value: expected });
    });
  }
});

describe("IR validation", () => {
  const ctx = {
    schemas: [{ id: "s1", name: "customers", fields: normalizeFields([{ name: "id", dataType: "text" }, { name: "k", dataType: "text", isPrimaryKey: true }], []) }],
    connectors: [{ id: "c1", name: "feed" }],
    flows: [{ id: "f1", key: "batch" }],
    defaultConnectorId: null,
  };
  test("a valid IR comes back typed, nodes in dependency order", () => {
    const r = validatePipelineIr(
      {
        nodes: [
          { id: "t", kind: "target", input: "x", schema: "customers", loadMode: "upsert", upsertKey: ["k"] },
          { id: "x", kind: "transform", input: "s", ops: [{ type: "rename", from: "a", to: "k" }] },
          { id: "s", kind: "source", connector: "feed", config: { format: "jsonl" } },
        ],
      },
      ctx,
    );
    assert.deepEqual(r.violations, []);
    assert.deepEqual(r.ir!.order, ["s", "x", "t"]);
  });
  test("a decide node names a decision flow of the tenant, by id or key", () => {
    const ir = (flowId: string) => ({
      nodes: [
        { id: "s", kind: "source", connector: "feed", config: { format: "jsonl" } },
        { id: "d", kind: "decide", input: "s", flowId },
        { id: "t", kind: "target", input: "d", schema: "customers", loadMode: "upsert", upsertKey: ["k"] },
      ],
    });
    assert.deepEqual(validatePipelineIr(ir("batch"), ctx).violations, []);
    assert.deepEqual(validatePipelineIr(ir("f1"), ctx).violations, []);
    assert.deepEqual(validatePipelineIr(ir("other"), ctx).violations, [{ field: "ir.nodes[1](d).flowId", message: 'names no decision flow of this tenant: "other"' }]);
  });
  test("a rename onto the same name is refused (it would copy the field and then delete it)", () => {
    const r = validatePipelineIr(
      {
        nodes: [
          { id: "s", kind: "source", connector: "feed", config: { format: "jsonl" } },
          { id: "x", kind: "transform", input: "s", ops: [{ type: "rename", from: "k", to: "k" }] },
          { id: "t", kind: "target", input: "x", schema: "customers", loadMode: "upsert", upsertKey: ["k"] },
        ],
      },
      ctx,
    );
    assert.equal(r.ir, null);
    assert.deepEqual(r.violations.map((v) => v.message), ["must differ from from"]);
    assert.match(r.violations[0].field, /ops\[0\]\.to$/);
  });
  test("id names the automatic key: refused as a field name unless a field is the primary key (spec 2.21)", () => {
    const v: Array<{ field: string; message: string }> = [];
    normalizeFields([{ name: "id", dataType: "text" }], v);
    assert.equal(v[0].field, "fields[0].name");
    for (const fields of [
      [{ name: "id", dataType: "integer", isPrimaryKey: true }, { name: "v", dataType: "varchar" }],
      [{ name: "code", dataType: "varchar", isPrimaryKey: true }, { name: "ID", dataType: "integer" }],
    ]) {
      const keyed: Array<{ field: string; message: string }> = [];
      assert.equal(normalizeFields(fields, keyed).length, 2);
      assert.deepEqual(keyed, []);
    }
    const staging: Array<{ field: string; message: string }> = [];
    normalizeFields([{ name: "k", dataType: "integer", isPrimaryKey: true }, { name: "__line", dataType: "integer" }], staging);
    assert.equal(staging[0].field, "fields[1].name", "the staging columns stay reserved");
  });
  test("globs", () => {
    assert.ok(globToRegExp("*.csv").test("a.csv"));
    assert.ok(!globToRegExp("*.csv").test("dir/a.csv"));
    assert.ok(globToRegExp("**/*.csv").test("dir/a.csv"));
    assert.ok(!globToRegExp("a?.csv").test("a.csv"));
  });
});

import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { CONFIG_VALIDATORS } from "../../src/core/index.js";

type Kind = keyof typeof CONFIG_VALIDATORS;

const cases: Array<[Kind, string, unknown, string[]]> = [
  ["qualificationRule", "valid gate", { condition: { attribute: "age", op: "gte", value: 18 }, onMissing: "block", appliesTo: { categoryIds: ["c"] } }, []],
  ["qualificationRule", "missing condition", {}, ["config.condition: is required"]],
  ["qualificationRule", "bad onMissing and nested condition error", { condition: { all: [{ attribute: "a", op: "nope" }] }, onMissing: "ignore" }, [
    "config.condition.all[0].op: must be one of eq, neq, gt, gte, lt, lte, in, not_in, contains, exists, not_exists, between, before, after",
    "config.onMissing: must be skip or block",
  ]],
  ["qualificationRule", "misspelt key", { condition: {}, onMisssing: "skip" }, ["config.onMisssing: unknown key"]],
  ["qualificationRule", "not an object", [], ["config: must be an object"]],
  ["contactPolicy", "valid cap", { scope: "category", scopeId: "cat", maxImpressions: 3, windowSeconds: 86400 }, []],
  ["contactPolicy", "valid suppression", { type: "suppression", afterOutcomes: ["dismiss"], windowSeconds: 3600 }, []],
  ["contactPolicy", "cap with bad scope and window", { scope: "customer", maxImpressions: 1.5, windowSeconds: 0 }, [
    "config.scope: must be offer or category or channel",
    "config.maxImpressions: must be an integer >= 0",
    "config.windowSeconds: must be an integer >= 1",
  ]],
  ["contactPolicy", "suppression without outcomes", { type: "suppression", afterOutcomes: [], windowSeconds: 60 }, [
    "config.afterOutcomes: must be an array of at least 1 non-empty strings",
  ]],
  ["guardrailRule", "valid", { condition: { attribute: "age", op: "lt", value: 18 }, action: "exclude" }, []],
  ["guardrailRule", "unknown action", { condition: {}, action: "boost" }, ["config.action: must be exclude"]],
  ["rankingProfile", "valid", { weights: { score: 1, clv: 0.5 }, isDefault: true }, []],
  ["rankingProfile", "negative weight and unknown weight", { weights: { score: -1, luck: 2 } }, [
    "config.weights.luck: unknown key",
    "config.weights.score: must be a number >= 0",
  ]],
  ["crossOfferConstraint", "valid exclusion", { type: "mutual_exclusion", offerIds: ["a", "b"] }, []],
  ["crossOfferConstraint", "exclusion of one offer", { type: "mutual_exclusion", offerIds: ["a"] }, ["config.offerIds: must be an array of at least 2 non-empty strings"]],
  ["crossOfferConstraint", "valid category max", { type: "max_per_category", categoryId: "c", max: 1 }, []],
  ["crossOfferConstraint", "category max without category", { type: "max_per_category", max: -1 }, ["config.categoryId: is required", "config.max: must be an integer >= 0"]],
  ["segment", "valid", { condition: { attribute: "tier", op: "in", value: ["gold"] } }, []],
  ["decisionFlow", "valid", { nodes: [{ type: "candidates", categoryIds: ["c"] }, { type: "score", modelKey: "m", shadowModelKeys: ["s"] }, { type: "rank", count: 2 }] }, []],
  ["decisionFlow", "bad node", { nodes: [{ type: "filter" }, { type: "rank", count: 0 }] }, [
    "config.nodes[0].type: must be candidates, score or rank",
    "config.nodes[1].count: must be an integer >= 1",
  ]],
];

describe("decision rule config validators", () => {
  for (const [kind, name, config, expected] of cases) {
    test(`${kind}: ${name}`, () => assert.deepEqual(CONFIG_VALIDATORS[kind](config), expected));
  }
});

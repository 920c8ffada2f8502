import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  REGISTRY_STATES,
  decide,
  isLegalMove,
  prepareSnapshot,
  rollbackGuard,
  scoredModelIds,
  scoringModelKeys,
  servingModelKey,
  type DecisionFlow,
  type GuardFacts,
  type ModelConfig,
  type RegistryStatus,
} from "../../src/core/index.js";

describe("legal registry moves (docs/models.md)", () => {
  // Written out here, not read from the table: this is the documented contract.
  const legal = new Set([
    "draft→shadow", "draft→challenger", "draft→archived",
    "shadow→draft", "shadow→challenger", "shadow→champion", "shadow→archived",
    "challenger→draft", "challenger→shadow", "challenger→champion", "challenger→archived",
    "champion→shadow", "champion→challenger", "champion→archived",
    "archived→draft",
  ]);
  for (const from of REGISTRY_STATES) {
    for (const to of REGISTRY_STATES) {
      const move = `${from}→${to}`;
      test(`${move} is ${legal.has(move) ? "legal" : "illegal"}`, () => assert.equal(isLegalMove(from, to), legal.has(move)));
    }
  }
});

describe("rollback guard", () => {
  const facts = (patch: Partial<GuardFacts>): GuardFacts => ({
    model: { key: "m2", family: "churn", status: "challenger" },
    to: "champion",
    family: "churn",
    incumbentChampion: { key: "m1" },
    scoredDecisions: 100,
    minScoredDecisions: 100,
    flows: [{ flowId: "f", flowName: "web", modelKey: "m1", shadowModelKeys: ["s1"] }],
    familyOfKey: new Map([["m1", "churn"], ["m2", "churn"], ["s1", "churn"], ["x", "upsell"]]),
    ...patch,
  });
  const rules = (f: GuardFacts) => rollbackGuard(f).map((t) => t.rule);

  test("a successor with enough scored decisions replaces the champion", () => assert.deepEqual(rules(facts({})), []));
  test("a successor with fewer than N scored decisions does not", () => {
    const trips = rollbackGuard(facts({ scoredDecisions: 99 }));
    assert.deepEqual(trips.map((t) => t.rule), ["UNPROVEN_SUCCESSOR"]);
    assert.match(trips[0].message, /scored 99 decisions, fewer than the 100 needed to replace champion m1/);
  });
  test("the first champion of a family needs no scored decisions", () => assert.deepEqual(rules(facts({ incumbentChampion: null, scoredDecisions: 0 })), []));
  test("N = 0 turns the scored-decisions rule off", () => assert.deepEqual(rules(facts({ scoredDecisions: 0, minScoredDecisions: 0 })), []));

  const champion = { key: "m1", family: "churn", status: "champion" as RegistryStatus };
  test("the champion of a family a flow scores with may not step down", () => {
    for (const to of ["challenger", "shadow"] as const) {
      assert.deepEqual(rules(facts({ model: champion, to, incumbentChampion: null })), ["FAMILY_LEFT_WITHOUT_CHAMPION"], to);
    }
  });
  test("a flow naming another model of the family counts as using it", () => {
    const flows = [{ flowId: "f", flowName: "web", modelKey: "m2", shadowModelKeys: [] }];
    assert.deepEqual(rules(facts({ model: champion, to: "challenger", incumbentChampion: null, flows })), ["FAMILY_LEFT_WITHOUT_CHAMPION"]);
  });
  test("a champion of a family no flow uses may step down", () => {
    const flows = [{ flowId: "f", flowName: "web", modelKey: "x", shadowModelKeys: [] }];
    assert.deepEqual(rules(facts({ model: champion, to: "challenger", incumbentChampion: null, flows })), []);
  });
  test("archiving a champion a flow names trips both rules", () => {
    assert.deepEqual(rules(facts({ model: champion, to: "archived", incumbentChampion: null })), ["FAMILY_LEFT_WITHOUT_CHAMPION", "MODEL_NAMED_BY_FLOW"]);
  });
  test("archiving a shadow a flow names as shadow trips; another one does not", () => {
    const shadow = (key: string) => ({ key, family: "churn", status: "shadow" as RegistryStatus });
    assert.deepEqual(rules(facts({ model: shadow("s1"), to: "archived", incumbentChampion: null })), ["MODEL_NAMED_BY_FLOW"]);
    assert.deepEqual(rules(facts({ model: shadow("s2"), to: "archived", incumbentChampion: null })), []);
  });
});

describe("serving model and family-scoped shadows", () => {
  const model = (key: string, family: string | undefined, registryStatus: RegistryStatus, patch: Partial<ModelConfig> = {}): ModelConfig =>
    ({ id: `id-${key}`, key, type: "logistic_regression", intercept: 0, coefficients: { "offer.priority": key.length / 100 }, family, registryStatus, ...patch }) as ModelConfig;
  const models = [
    model("churn-v1", "churn", "challenger"),
    model("churn-v2", "churn", "champion"),
    model("churn-shadow", "churn", "shadow"),
    model("upsell-v1", "upsell", "champion"),
    model("upsell-shadow", "upsell", "shadow"),
    model("loose", undefined, "draft"),
    model("loose-shadow", undefined, "shadow"),
  ];
  const flow = (modelKey: string, shadowModelKeys?: string[]): DecisionFlow => ({ id: "f", name: "f", nodes: [{ type: "score", modelKey, shadowModelKeys }] });
  const snapshot = prepareSnapshot({ offers: [], models });

  test("a node naming any model of a family scores with the family's champion", () => {
    assert.equal(servingModelKey(snapshot, "churn-v1"), "churn-v2");
    assert.equal(servingModelKey(snapshot, "churn-v2"), "churn-v2");
    assert.equal(servingModelKey(snapshot, "loose"), "loose", "no family and no default champion: the named model");
    const withDefaultChampion = prepareSnapshot({ offers: [], models: [...models, model("loose-champion", undefined, "champion")] });
    assert.equal(servingModelKey(withDefaultChampion, "loose"), "loose-champion", "models without a family share the default family's champion");
    assert.equal(servingModelKey(withDefaultChampion, "churn-v1"), "churn-v2");
    assert.equal(servingModelKey(snapshot, "gone"), "gone", "an unknown key is left for scoring to report");
  });
  test("a family without a champion serves the named model", () => {
    const noChampion = prepareSnapshot({ offers: [], models: [model("a", "f", "challenger"), model("b", "f", "shadow")] });
    assert.deepEqual(scoringModelKeys(noChampion, flow("a")), { modelKey: "a", shadowModelKeys: ["b"] });
  });
  test("only the serving model's family's shadows are scored, plus the node's own", () => {
    assert.deepEqual(scoringModelKeys(snapshot, flow("churn-v1")), { modelKey: "churn-v2", shadowModelKeys: ["churn-shadow"] });
    assert.deepEqual(scoringModelKeys(snapshot, flow("upsell-v1", ["loose"])), { modelKey: "upsell-v1", shadowModelKeys: ["loose", "upsell-shadow"] });
    assert.deepEqual(scoringModelKeys(snapshot, flow("loose")), { modelKey: "loose", shadowModelKeys: ["loose-shadow"] }, "no family: the default family's shadows");
  });
  test("an override (an experiment's variant) serves as given, with its family's shadows", () => {
    assert.deepEqual(scoringModelKeys(snapshot, flow("churn-v2"), "churn-v1"), { modelKey: "churn-v1", shadowModelKeys: ["churn-shadow"] });
  });
  test("a shadow is recorded and never changes the ranking; its id counts as having scored", () => {
    const offers = ["a", "b", "c"].map((id, i) => ({ id, name: id, status: "active" as const, priority: 10 + 40 * i, businessValue: 50, createdAt: "2024-01-01T00:00:00Z" }));
    // The shadow ranks in the opposite order to the champion.
    const shadow = model("churn-shadow", "churn", "shadow", { coefficients: { "offer.priority": -1 } } as Partial<ModelConfig>);
    const input = { customerId: "c", customer: {}, context: {}, clv: null, seed: "s", explain: true, now: "2024-06-01T00:00:00Z", flowId: "f" };
    const withShadow = prepareSnapshot({ offers, models: [...models.filter((m) => m.key !== "churn-shadow"), shadow], flows: [flow("churn-v1")] });
    const without = prepareSnapshot({ offers, models: models.filter((m) => m.key !== "churn-shadow"), flows: [flow("churn-v1")] });
    const a = decide(withShadow, input);
    const b = decide(without, input);
    assert.deepEqual(a.offers.map((o) => o.offerId), b.offers.map((o) => o.offerId));
    assert.deepEqual(a.offers.map((o) => o.score), b.offers.map((o) => o.score));
    assert.equal(a.modelKey, "churn-v2");
    assert.ok(a.scoringResults.every((s) => typeof s.shadowScores?.["churn-shadow"] === "number"), "every candidate has the shadow's score");
    assert.ok(b.scoringResults.every((s) => s.shadowScores === undefined));
    const prepared = { candidates: [{}], models: { "churn-v2": models[1], "churn-shadow": shadow }, modelKey: "churn-v2", shadowModelKeys: ["churn-shadow", "gone"] };
    assert.deepEqual(scoredModelIds(prepared as never), ["id-churn-v2", "id-churn-shadow"]);
    assert.deepEqual(scoredModelIds({ ...prepared, candidates: [] } as never), [], "nothing scored without candidates");
  });
});

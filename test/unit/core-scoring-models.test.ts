import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  contextBucket,
  positionOf,
  createRandom,
  offerImpact,
  productRelevance,
  sampleBeta,
  sampleGamma,
  chooseScoringPath,
  candidateScores,
  scoreCandidates,
  treeWalks,
  validateModel,
  type AdaptiveCount,
  type AdaptiveModel,
  type FormulaModel,
  type GradientBoostedModel,
  type LogisticRegressionModel,
  type ModelConfig,
  type CandidateScore,
  type ScoreTask,
  type ScoringOffer,
  type XgbNode,
} from "../../src/core/index.js";

/** Task overrides, with adaptive evidence as a map by adaptiveCountKey. */
type Overrides = Partial<ScoreTask> & { adaptiveCounts?: Record<string, AdaptiveCount> };

const evidenceFromRecord = (record: Record<string, AdaptiveCount>) => ({ keys: Object.keys(record), counts: Object.values(record) });

/** A one-model task over the given candidates; tests override what they exercise. */
function task(model: ModelConfig, { adaptiveCounts = {}, ...overrides }: Overrides = {}, candidates: ScoringOffer[] = [{ id: "o1", priority: 50, businessValue: 50 }]): ScoreTask {
  return {
    candidates,
    customer: {},
    context: {},
    models: { [model.key]: model },
    modelKey: model.key,
    shadowModelKeys: [],
    evidence: evidenceFromRecord(adaptiveCounts),
    clv: null,
    seed: "seed-1",
    explain: true,
    ...overrides,
  };
}

/** A task's scores as one row per candidate, as a trace shows them. */
function scoreRows(t: ScoreTask): CandidateScore[] {
  return candidateScores(scoreCandidates(t), t.candidates);
}

function scoreOne(model: ModelConfig, overrides: Overrides = {}, offer?: ScoringOffer) {
  return scoreRows(task(model, overrides, offer ? [offer] : undefined))[0];
}

function close(actual: number, expected: number, what = "value"): void {
  assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} != ${expected}`);
}

const sigmoid = (m: number) => 1 / (1 + Math.exp(-m));

const ADAPTIVE: AdaptiveModel = { id: "ad-1", key: "adaptive", type: "adaptive" };

describe("Beta-Bernoulli posterior mean", () => {
  const cases: Array<[string, Partial<AdaptiveModel>, { successes: number; trials: number } | undefined, number, string]> = [
    ["no counts: the uniform prior mean", {}, undefined, 0.5, "cold_start"],
    ["3/10 with Beta(1,1): 4/12", {}, { successes: 3, trials: 10 }, 4 / 12, "cold_start"],
    ["19 trials is still cold start", {}, { successes: 5, trials: 19 }, 6 / 21, "cold_start"],
    ["20 trials reaches adaptation", {}, { successes: 5, trials: 20 }, 6 / 22, "adaptation"],
    ["30/100: 31/102", {}, { successes: 30, trials: 100 }, 31 / 102, "adaptation"],
    ["custom prior Beta(2,8), no data", { alpha0: 2, beta0: 8 }, undefined, 0.2, "cold_start"],
    ["custom cold-start threshold", { coldStartTrials: 5 }, { successes: 1, trials: 5 }, 2 / 7, "adaptation"],
  ];
  for (const [name, patch, counts, mean, source] of cases) {
    test(name, () => {
      const result = scoreOne({ ...ADAPTIVE, ...patch }, { adaptiveCounts: counts ? { "o1|*": counts } : {} });
      close(result.score, mean, "score");
      assert.equal(result.propensity, result.score);
      assert.equal(result.propensitySource, source);
      close(result.explanations.reduce((s, e) => s + e.contribution, 0), mean, "prior + observed = mean");
    });
  }

  test("counts are per context bucket", () => {
    const bucketBy = ["context.channel", "customer.tier"];
    const model = { ...ADAPTIVE, bucketBy };
    const goldEmail = contextBucket(bucketBy, { context: { channel: "email" }, customer: { tier: "gold" } });
    const noTier = contextBucket(bucketBy, { context: { channel: "email" }, customer: {} });
    const counts = { [`o1|${goldEmail}`]: { successes: 9, trials: 10 }, [`o1|${noTier}`]: { successes: 0, trials: 10 } };
    close(scoreOne(model, { context: { channel: "email" }, customer: { tier: "gold" }, adaptiveCounts: counts }).score, 10 / 12);
    close(scoreOne(model, { context: { channel: "email" }, adaptiveCounts: counts }).score, 1 / 12, "a missing attribute is a bucket of its own");
    assert.equal(contextBucket([], { customer: {}, context: {} }), "*");
  });

  test("a bucket is a fixed-length hash of the values: no delimiter to collide on, no raw value in a key", () => {
    const bag = (context: Record<string, unknown>, customer: Record<string, unknown> = {}) => ({ context, customer });
    const two = ["context.a", "context.b"];
    const pairs: Array<[string, string, string]> = [
      // [old bucket both shared, new bucket, new bucket]
      ["x,y,z", contextBucket(two, bag({ a: "x,y", b: "z" })), contextBucket(two, bag({ a: "x", b: "y,z" }))],
      ["_", contextBucket(["context.a"], bag({ a: "_" })), contextBucket(["context.a"], bag({}))],
      ["*", contextBucket(["context.a"], bag({ a: "*" })), "*"],
      ["gold", contextBucket(["context.a"], bag({ a: "gold" })), contextBucket(["customer.tier"], bag({}, { tier: "gold" }))],
      ["[object Object]", contextBucket(["context.a"], bag({ a: { x: 1 } })), contextBucket(["context.a"], bag({ a: { x: 2 } }))],
    ];
    for (const [old, one, other] of pairs) assert.notEqual(one, other, `once both "${old}"`);
    for (const bucket of pairs.flatMap(([, one, other]) => [one, other]).filter((b) => b !== "*")) assert.match(bucket, /^[0-9a-f]{16}$/);
    assert.equal(contextBucket(["context.a"], bag({ a: "x".repeat(100_000) })).length, 16);
    assert.equal(contextBucket(["context.a"], bag({ a: 7 })), contextBucket(["context.a"], bag({ a: "7" })), "values compare as text");
    assert.equal(contextBucket(["context.a"], bag({ a: { y: 1, x: 2 } })), contextBucket(["context.a"], bag({ a: { x: 2, y: 1 } })), "objects by canonical JSON");
  });

  test("a bucket over the tenant's cap scores from the all-contexts evidence", () => {
    const bucketBy = ["context.channel"];
    const model = { ...ADAPTIVE, bucketBy };
    const email = contextBucket(bucketBy, { context: { channel: "email" }, customer: {} });
    const counts = { [`o1|${email}`]: { successes: 9, trials: 10 }, "o1|*": { successes: 0, trials: 10 } };
    close(scoreOne(model, { context: { channel: "email" }, adaptiveCounts: counts }).score, 10 / 12);
    close(scoreOne(model, { context: { channel: "email" }, adaptiveCounts: counts, bucketsOverCap: [email] }).score, 1 / 12);
  });

  test("every candidate is scored in the request's bucket", () => {
    const model = { ...ADAPTIVE, bucketBy: ["context.channel"] };
    const [email, web] = ["email", "web"].map((channel) => contextBucket(model.bucketBy, { context: { channel }, customer: {} }));
    const counts = { [`o1|${email}`]: { successes: 9, trials: 10 }, [`o2|${email}`]: { successes: 1, trials: 10 }, [`o2|${web}`]: { successes: 10, trials: 10 } };
    const offers: ScoringOffer[] = [{ id: "o1", priority: 1, businessValue: 1 }, { id: "o2", priority: 1, businessValue: 1 }];
    const scored = (channel: string) => scoreRows(task(model, { context: { channel }, adaptiveCounts: counts }, offers)).map((r) => r.score);
    const [email1, email2] = scored("email");
    close(email1, 10 / 12);
    close(email2, 2 / 12);
    const [web1, web2] = scored("web");
    close(web1, 1 / 2, "no web evidence for o1: the prior");
    close(web2, 11 / 12);
  });

  test("a bucket cannot be an offer field: evidence is kept per offer already", () => {
    assert.deepEqual(validateModel({ ...ADAPTIVE, bucketBy: ["context.channel", "offer.categoryId"] }), [
      "model.bucketBy[1]: must name a customer or request-context attribute, not an offer field (evidence is kept per offer already)",
    ]);
  });

  test("inconsistent counts degrade instead of scoring nonsense", () => {
    const result = scoreOne(ADAPTIVE, { adaptiveCounts: { "o1|*": { successes: 5, trials: 3 } } });
    assert.equal(result.degraded, true);
    assert.equal(result.score, 0.5);
    assert.equal(result.reason, "model adaptive failed on offer o1: adaptive counts o1|* are inconsistent: 5/3");
  });

  test("invalid priors are reported", () => {
    assert.deepEqual(validateModel({ ...ADAPTIVE, alpha0: 0, bucketBy: "channel" as unknown as string[] }), [
      "model.alpha0: must be a positive number",
      "model.bucketBy: must be an array of attribute paths",
    ]);
  });
});

describe("evidence counts", () => {
  test("a key's position is found in its own list, whichever list was asked last", () => {
    const one = { keys: ["o1|*", "o2|*"], counts: [{ successes: 1, trials: 2 }, null] };
    const other = { keys: ["o2|*", "o1|*"], counts: [{ successes: 3, trials: 4 }, { successes: 5, trials: 6 }] };
    for (let round = 0; round < 2; round++) {
      assert.equal(positionOf(one, "o1|*"), 0);
      assert.equal(positionOf(other, "o1|*"), 1);
      assert.equal(positionOf(one, "o2|*"), 1);
      assert.equal(positionOf(other, "o2|*"), 0);
      assert.equal(positionOf(one, "o3|*"), -1, "not read");
    }
  });

  test("the same offers in two lists of different order each read their own counts", () => {
    const a: ScoringOffer = { id: "o1", priority: 1, businessValue: 1 };
    const b: ScoringOffer = { id: "o2", priority: 1, businessValue: 1 };
    const evidence = { keys: ["o1|*", "o2|*"], counts: [{ successes: 9, trials: 10 }, { successes: 1, trials: 10 }] };
    const scored = (candidates: ScoringOffer[]) => scoreRows({ ...task(ADAPTIVE, {}, candidates), evidence }).map((r) => `${r.offerId} ${r.score.toFixed(6)}`);
    // The same list objects each round: the second round reads positions kept for each list.
    const [ab, ba, justB] = [[a, b], [b, a], [b]];
    for (let round = 0; round < 2; round++) {
      assert.deepEqual(scored(ab), [`o1 ${(10 / 12).toFixed(6)}`, `o2 ${(2 / 12).toFixed(6)}`]);
      assert.deepEqual(scored(ba), [`o2 ${(2 / 12).toFixed(6)}`, `o1 ${(10 / 12).toFixed(6)}`]);
      assert.deepEqual(scored(justB), [`o2 ${(2 / 12).toFixed(6)}`], "a list of one, after longer ones");
    }
  });

  test("an offer scores from its count in whichever key list the task carries, in any order", () => {
    const offers: ScoringOffer[] = [{ id: "o1", priority: 1, businessValue: 1 }, { id: "o2", priority: 1, businessValue: 1 }];
    const scored = (evidence: ScoreTask["evidence"]) => scoreRows({ ...task(ADAPTIVE, {}, offers), evidence }).map((r) => r.score);
    const counts = { "o1|*": { successes: 9, trials: 10 }, "o2|*": { successes: 1, trials: 10 } };
    const forward = { keys: ["o1|*", "o2|*"], counts: [counts["o1|*"], counts["o2|*"]] };
    const backward = { keys: ["o2|*", "o1|*"], counts: [counts["o2|*"], counts["o1|*"]] };
    for (let round = 0; round < 2; round++) {
      for (const evidence of [forward, backward]) {
        const [s1, s2] = scored(evidence);
        close(s1, 10 / 12);
        close(s2, 2 / 12);
      }
    }
    const [unread] = scored({ keys: ["o2|*"], counts: [counts["o2|*"]] });
    close(unread, 1 / 2, "a key the list does not hold: the prior alone");
  });
});

describe("Thompson sampling", () => {
  const thompson: AdaptiveModel = { ...ADAPTIVE, thompson: true };
  const counts = { "o1|*": { successes: 30, trials: 100 } };

  test("the same seed replays the same draw", () => {
    const a = scoreOne(thompson, { seed: "req-42", adaptiveCounts: counts });
    const b = scoreOne(thompson, { seed: "req-42", adaptiveCounts: counts });
    assert.equal(a.score, b.score);
    assert.notEqual(a.score, 31 / 102, "a draw, not the mean");
    assert.ok(a.score > 0 && a.score < 1);
    close(a.explanations.find((e) => e.field === "thompson_sample")!.contribution, a.score - 31 / 102, "sampling term");
  });

  test("different seeds give different draws", () => {
    const draws = new Set(["a", "b", "c", "d"].map((seed) => scoreOne(thompson, { seed, adaptiveCounts: counts }).score));
    assert.equal(draws.size, 4);
  });

  test("draws average to the posterior mean", () => {
    let sum = 0;
    const n = 4000;
    for (let i = 0; i < n; i++) sum += scoreOne(thompson, { seed: `s${i}`, adaptiveCounts: counts, explain: false }).score;
    assert.ok(Math.abs(sum / n - 31 / 102) < 0.01, `mean ${sum / n}`);
  });

  test("samplers: mulberry32 is deterministic and Gamma/Beta have the right means", () => {
    const r1 = createRandom("x");
    const r2 = createRandom("x");
    assert.deepEqual([r1(), r1(), r1()], [r2(), r2(), r2()]);
    const random = createRandom("moments");
    const n = 20000;
    let gammaSmall = 0;
    let gammaLarge = 0;
    let beta = 0;
    for (let i = 0; i < n; i++) {
      gammaSmall += sampleGamma(0.5, random);
      gammaLarge += sampleGamma(7, random);
      beta += sampleBeta(2, 6, random);
    }
    assert.ok(Math.abs(gammaSmall / n - 0.5) < 0.03, `Gamma(0.5) mean ${gammaSmall / n}`);
    assert.ok(Math.abs(gammaLarge / n - 7) < 0.1, `Gamma(7) mean ${gammaLarge / n}`);
    assert.ok(Math.abs(beta / n - 0.25) < 0.01, `Beta(2,6) mean ${beta / n}`);
    assert.throws(() => sampleGamma(0, random), /gamma shape must be positive/);
  });
});

const FORMULA: FormulaModel = { id: "f-1", key: "formula", type: "formula" };
const FORMULA_OFFER: ScoringOffer = { id: "o1", priority: 80, businessValue: 60, margin: 0.5, revenueValue: 100, productType: "loan" };

// Default weights 0.2/0.2/0.4/0.1/0.1 (sum 1). impact = 1 + 0.5·100/(100+100) = 1.25.
// base = 0.8·0.2 + 0.6·0.2 + 0.5·0.4 (prior-only propensity) + 0.25·0.1 + 1·0.1 = 0.605.
const FORMULA_BASE = 0.605;

describe("formula model", () => {
  const cases: Array<{ name: string; model?: Partial<FormulaModel>; customer?: Record<string, unknown>; clv?: { clvScore: number } | null; offer?: Partial<ScoringOffer>; expected: number }> = [
    { name: "no CLV record: the base score", customer: { preferredProductType: "loan" }, expected: FORMULA_BASE },
    { name: "CLV record but clvWeight 0: no tilt", customer: { preferredProductType: "loan" }, clv: { clvScore: 80 }, expected: FORMULA_BASE },
    { name: "CLV tilt: base · impact^(clvWeight · clvScore/100)", model: { clvWeight: 1 }, customer: { preferredProductType: "loan" }, clv: { clvScore: 80 }, expected: FORMULA_BASE * 1.25 ** 0.8 },
    { name: "clvWeight but no CLV record: skipped", model: { clvWeight: 1 }, customer: { preferredProductType: "loan" }, clv: null, expected: FORMULA_BASE },
    { name: "CLV tilt leaves a zero-impact offer unchanged", model: { clvWeight: 2 }, customer: { preferredProductType: "loan" }, clv: { clvScore: 100 }, offer: { revenueValue: null }, expected: FORMULA_BASE - 0.025 },
    { name: "product mismatch: relevance 0", customer: { preferredProductType: "card" }, expected: FORMULA_BASE - 0.1 },
    { name: "relevance attribute missing: 0.5", expected: FORMULA_BASE - 0.05 },
    { name: "relevance against a list, case-insensitive", customer: { preferredProductType: ["Card", "LOAN"] }, expected: FORMULA_BASE },
    { name: "custom relevance attribute from context", model: { relevanceAttribute: "context.product" }, expected: FORMULA_BASE - 0.05 },
    { name: "weights are normalised", model: { weights: { priority: 1, businessValue: 0, propensity: 0, impact: 0, relevance: 0 } }, expected: 0.8 },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const result = scoreOne({ ...FORMULA, ...c.model }, { customer: c.customer ?? {}, clv: c.clv ?? null }, { ...FORMULA_OFFER, ...c.offer });
      close(result.score, c.expected, "score");
      close(result.explanations.reduce((s, e) => s + e.contribution, 0), c.expected, "explanations sum to the score");
    });
  }

  test("each term is explained, with the CLV tilt as its own entry", () => {
    const result = scoreOne({ ...FORMULA, clvWeight: 1 }, { customer: { preferredProductType: "loan" }, clv: { clvScore: 80 } }, FORMULA_OFFER);
    const byField = Object.fromEntries(result.explanations.map((e) => [e.field, e.contribution]));
    close(byField.priority, 0.16, "priority");
    close(byField.businessValue, 0.12, "businessValue");
    close(byField.propensity, 0.2, "propensity");
    close(byField.impact, 0.025, "impact");
    close(byField.relevance, 0.1, "relevance");
    close(byField.clv, FORMULA_BASE * 1.25 ** 0.8 - FORMULA_BASE, "clv");
  });

  test("propensity comes from the adaptive counts", () => {
    const result = scoreOne(FORMULA, { adaptiveCounts: { "o1|*": { successes: 29, trials: 38 } } }, FORMULA_OFFER);
    close(result.propensity, 30 / 40, "posterior mean");
    assert.equal(result.propensitySource, "adaptation");
  });

  test("impact and relevance helpers", () => {
    assert.equal(offerImpact({}), 1);
    assert.equal(offerImpact({ revenueValue: 300 }), 1.75, "margin defaults to 1");
    assert.equal(offerImpact({ margin: 2, revenueValue: 100 }), 1.5, "margin is clamped to 1");
    assert.equal(offerImpact({ margin: 0.5, revenueValue: -5 }), 1);
    assert.equal(productRelevance(null, "loan"), 0.5);
    assert.equal(productRelevance("loan", undefined), 0.5);
  });

  test("invalid weights are reported", () => {
    assert.deepEqual(validateModel({ ...FORMULA, weights: { priority: -1 } }), ["model.weights.priority: must be a number >= 0"]);
    assert.deepEqual(validateModel({ ...FORMULA, weights: { priority: 0, businessValue: 0, propensity: 0, impact: 0, relevance: 0 } }), [
      "model.weights: at least one weight must be positive",
    ]);
  });
});

const LR: LogisticRegressionModel = {
  id: "lr-1",
  key: "lr",
  type: "logistic_regression",
  intercept: -1,
  coefficients: { "customer.age": 0.02, "context.channel=email": 0.5, "offer.priority": 0.01 },
};

describe("logistic regression", () => {
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>, number]> = [
    ["all features: -1 + 50·0.02 + 0.5 + 50·0.01", { age: 50 }, { channel: "email" }, 1],
    ["missing age counts as 0", {}, { channel: "email" }, 0],
    ["indicator off", { age: 50 }, { channel: "sms" }, 0.5],
    ["numeric string feature", { age: "40" }, { channel: "email" }, 0.8],
    ["boolean feature is 1", { age: true }, {}, -1 + 0.02 + 0.5],
  ];
  for (const [name, customer, context, margin] of cases) {
    test(name, () => {
      const result = scoreOne(LR, { customer, context });
      close(result.score, sigmoid(margin), "probability");
      assert.equal(result.propensitySource, "model");
      assert.equal(result.modelType, "logistic_regression");
      close(result.explanations.reduce((s, e) => s + e.contribution, 0), margin, "explanations sum to the margin");
    });
  }

  test("candidates differ by their offer features; the next task reads its own customer", () => {
    const offers: ScoringOffer[] = [0, 100].map((priority, i) => ({ id: `o${i}`, priority, businessValue: 0 }));
    const margins = (customer: Record<string, unknown>) =>
      scoreRows(task(LR, { customer, context: {}, explain: false }, offers)).map((r) => Math.log(r.score / (1 - r.score)));
    margins({ age: 50 }).forEach((m, i) => close(m, [0, 1][i], `age 50, offer ${i}`));
    margins({}).forEach((m, i) => close(m, [-1, 0][i], `no age, offer ${i}`));
  });

  test("explanations are the intercept and coefficient × value", () => {
    const result = scoreOne(LR, { customer: { age: 50 }, context: { channel: "email" } });
    assert.deepEqual(result.explanations, [
      { field: "(intercept)", contribution: -1 },
      { field: "customer.age", contribution: 1 },
      { field: "context.channel=email", contribution: 0.5 },
      { field: "offer.priority", contribution: 0.5 },
    ]);
  });

  test("no explanations without explain", () => {
    assert.deepEqual(scoreOne(LR, { explain: false }).explanations, []);
  });

  test("featureMap maps model names to attribute paths", () => {
    const mapped = { ...LR, coefficients: { f0: 0.1 }, intercept: 0, featureMap: { f0: "customer.age" } };
    close(scoreOne(mapped, { customer: { age: 10 } }).score, sigmoid(1), "probability");
  });

  const invalid: Array<[string, Partial<LogisticRegressionModel>, string]> = [
    ["NaN intercept", { intercept: Number.NaN }, "model.intercept: must be a finite number"],
    ["coefficients not an object", { coefficients: [] as unknown as Record<string, number> }, "model.coefficients: must be an object of feature name to weight"],
    ["string weight", { coefficients: { age: "1" as unknown as number } }, "model.coefficients.age: must be a finite number"],
  ];
  for (const [name, patch, message] of invalid) {
    test(`invalid: ${name} degrades to 0.5`, () => {
      const model = { ...LR, ...patch };
      assert.deepEqual(validateModel(model), [message]);
      const result = scoreOne(model);
      assert.equal(result.degraded, true);
      assert.equal(result.score, 0.5);
      assert.equal(result.reason, `model lr is invalid: ${message}`);
    });
  }
});

/*
 * Two trees, hand-computed. Tree 0 splits on age < 30 (missing → node 2), then income < 50000
 * (missing → node 4). Tree 1 splits on the one-hot indicator context.channel=email < 0.5.
 * Saabas expectations, with covers: E[t0 node 2] = (30·-0.2 + 10·0.6)/40 = 0, E[t0 root] =
 * (60·0.4 + 40·0)/100 = 0.24, E[t1 root] = (70·-0.1 + 30·0.3)/100 = 0.02, so bias = 0.26.
 */
const GB_TREES: XgbNode[] = [
  {
    nodeid: 0, split: "age", split_condition: 30, yes: 1, no: 2, missing: 2, cover: 100,
    children: [
      { nodeid: 1, leaf: 0.4, cover: 60 },
      {
        nodeid: 2, split: "income", split_condition: 50000, yes: 3, no: 4, missing: 4, cover: 40,
        children: [{ nodeid: 3, leaf: -0.2, cover: 30 }, { nodeid: 4, leaf: 0.6, cover: 10 }],
      },
    ],
  },
  {
    nodeid: 0, split: "context.channel=email", split_condition: 0.5, yes: 1, no: 2, missing: 1, cover: 100,
    children: [{ nodeid: 1, leaf: -0.1, cover: 70 }, { nodeid: 2, leaf: 0.3, cover: 30 }],
  },
];

const GB: GradientBoostedModel = { id: "gb-1", key: "gb", type: "gradient_boosted", trees: GB_TREES };

function score(model: GradientBoostedModel, customer: Record<string, unknown>, context: Record<string, unknown> = {}) {
  return scoreOne(model, { customer, context });
}


describe("XGBoost dump evaluator", () => {
  const cases: Array<{ name: string; customer: Record<string, unknown>; context?: Record<string, unknown>; margin: number; model?: Partial<GradientBoostedModel> }> = [
    { name: "left leaf then indicator on: 0.4 + 0.3", customer: { age: 25, income: 60000 }, context: { channel: "email" }, margin: 0.7 },
    { name: "right branch, income yes, indicator off: -0.2 - 0.1", customer: { age: 40, income: 40000 }, context: { channel: "web" }, margin: -0.3 },
    { name: "split_condition is strict: age 30 goes no, income 50000 goes no", customer: { age: 30, income: 50000 }, margin: 0.5 },
    { name: "missing age and income follow the missing branches", customer: {}, margin: 0.6 - 0.1 },
    { name: "null counts as missing", customer: { age: null, income: null }, margin: 0.5 },
    { name: "numeric strings are numbers", customer: { age: "25" }, context: { channel: "email" }, margin: 0.7 },
    { name: "non-numeric value is missing", customer: { age: "young", income: 1 }, margin: -0.2 - 0.1 },
    { name: "baseScore 0.2 adds logit(0.2) to the margin", customer: { age: 25 }, context: { channel: "email" }, margin: Math.log(0.2 / 0.8) + 0.7, model: { baseScore: 0.2 } },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const result = score({ ...GB, ...c.model }, c.customer, c.context);
      assert.equal(result.degraded, undefined);
      assert.equal(result.propensitySource, "model");
      close(result.score, sigmoid(c.margin), "probability");
      const sum = result.explanations.reduce((s, e) => s + e.contribution, 0);
      close(sum, c.margin, "explanations add up to the margin");
    });
  }

  test("reg:squarederror returns the raw margin with baseScore as the base", () => {
    const result = score({ ...GB, objective: "reg:squarederror", baseScore: 0.5 }, { age: 25 }, { channel: "email" });
    close(result.score, 1.2, "margin");
  });

  test("get_dump strings score like objects", () => {
    const result = score({ ...GB, trees: GB_TREES.map((t) => JSON.stringify(t)) }, { age: 40, income: 40000 });
    close(result.score, sigmoid(-0.3), "probability");
  });

  test("Saabas attribution per feature, hand-computed", () => {
    const result = score(GB, { age: 40, income: 40000 }, { channel: "web" });
    const byField = Object.fromEntries(result.explanations.map((e) => [e.field, e.contribution]));
    close(byField["(bias)"], 0.26, "bias");
    close(byField.age, -0.24, "age");
    close(byField.income, -0.2, "income");
    close(byField["context.channel=email"], -0.12, "channel");
    assert.deepEqual(result.explanations.map((e) => e.field), ["(bias)", "age", "income", "context.channel=email"], "largest first");
  });

  test("featureMap renames dump feature names", () => {
    const renamed: GradientBoostedModel = {
      ...GB,
      trees: [{ ...GB_TREES[0], split: "f0", children: [GB_TREES[0].children![0], { ...GB_TREES[0].children![1], split: "f1" }] }],
      featureMap: { f0: "customer.age", f1: "customer.income" },
    };
    close(score(renamed, { age: 40, income: 40000 }).score, sigmoid(-0.2), "probability");
  });

  test("offer features are read per candidate, request features per task", () => {
    // Tree: offer.priority < 50 → (age < 30 → 1.0 else 0.5); else → (age < 30 → -1.0 else -0.5).
    const byAge = (id: number, low: number, high: number): XgbNode => ({
      nodeid: id, split: "customer.age", split_condition: 30, yes: id + 10, no: id + 20, missing: id + 20,
      children: [{ nodeid: id + 10, leaf: low }, { nodeid: id + 20, leaf: high }],
    });
    const model: GradientBoostedModel = {
      id: "gb-offer", key: "gb-offer", type: "gradient_boosted", objective: "reg:squarederror", baseScore: 0,
      trees: [{ nodeid: 0, split: "offer.priority", split_condition: 50, yes: 1, no: 2, missing: 2, children: [byAge(1, 1, 0.5), byAge(2, -1, -0.5)] }],
    };
    const offers: ScoringOffer[] = [10, 90, 20, 80].map((priority, i) => ({ id: `o${i}`, priority, businessValue: 0 }));
    const scores = (customer: Record<string, unknown>) => scoreRows(task(model, { customer, explain: false }, offers)).map((r) => r.score);
    // Two tasks in a row on the same compiled model: the second customer's age must be read afresh.
    assert.deepEqual(scores({ age: 25 }), [1, -1, 1, -1]);
    assert.deepEqual(scores({ age: 45 }), [0.5, -0.5, 0.5, -0.5]);
    assert.deepEqual(scores({}), [0.5, -0.5, 0.5, -0.5], "a feature missing in the next task is missing, not the last value");
  });

  test("without covers, expectations weigh children equally", () => {
    const strip = (n: XgbNode): XgbNode => ({ ...n, cover: undefined, children: n.children?.map(strip) });
    const result = score({ ...GB, trees: [strip(GB_TREES[1])] }, {}, { channel: "email" });
    const byField = Object.fromEntries(result.explanations.map((e) => [e.field, e.contribution]));
    close(byField["(bias)"], 0.1, "bias = mean of -0.1 and 0.3");
    close(byField["context.channel=email"], 0.2, "0.3 - 0.1");
  });
});

describe("invalid dumps fail validation and degrade", () => {
  const cases: Array<[string, Partial<GradientBoostedModel>, string]> = [
    ["no trees", { trees: [] }, "model.trees: must be a non-empty array of trees"],
    ["a null tree", { trees: [GB_TREES[0], null as unknown as XgbNode] }, "model.trees[1]: must be a tree node object"],
    ["bad JSON string", { trees: ["{nodeid:"] }, "model.trees[0]: is not valid JSON"],
    ["dangling yes", { trees: [{ ...GB_TREES[1], yes: 7 }] }, "model.trees[0].yes: names no child node (7)"],
    ["NaN leaf", { trees: [{ ...GB_TREES[1], children: [{ nodeid: 1, leaf: Number.NaN }, GB_TREES[1].children![1]] }] }, "model.trees[0].children[0].leaf: must be a finite number"],
    ["split without children", { trees: [{ nodeid: 0, split: "age", split_condition: 1, yes: 1, no: 2, missing: 1 }] }, "model.trees[0].children: must list the split's child nodes"],
    ["string threshold", { trees: [{ ...GB_TREES[1], split_condition: "0.5" as unknown as number }] }, "model.trees[0].split_condition: must be a finite number"],
    ["base score outside (0, 1) for logistic", { baseScore: 1 }, "model.baseScore: must be a probability in (0, 1)"],
    ["unknown objective", { objective: "multi:softmax" as "binary:logistic" }, "model.objective: unsupported objective multi:softmax"],
  ];
  for (const [name, patch, message] of cases) {
    test(name, () => {
      const model = { ...GB, ...patch };
      assert.ok(validateModel(model).includes(message), `${JSON.stringify(validateModel(model))} lacks ${message}`);
      const result = score(model, { age: 25 });
      assert.equal(result.degraded, true);
      assert.equal(result.score, 0.5);
      assert.equal(result.propensitySource, "model");
      assert.match(result.reason!, /^model gb is invalid: /);
    });
  }

  test("a non-finite margin at scoring time degrades", () => {
    const huge: GradientBoostedModel = {
      ...GB,
      objective: "reg:squarederror",
      trees: [{ nodeid: 0, leaf: 1e308 }, { nodeid: 0, leaf: 1e308 }],
    };
    assert.deepEqual(validateModel(huge), []);
    const result = score(huge, {});
    assert.equal(result.degraded, true);
    assert.equal(result.reason, "model gb produced a non-finite score for offer o1");
  });
});

describe("scoreCandidates", () => {
  const offers: ScoringOffer[] = [
    { id: "a", priority: 90, businessValue: 10 },
    { id: "b", priority: 10, businessValue: 90 },
  ];

  test("one score per candidate, in candidate order, with model identity", () => {
    const scores = scoreRows(task(LR, {}, offers));
    assert.deepEqual(scores.map((s) => [s.offerId, s.modelId, s.modelKey, s.modelType]), [
      ["a", "lr-1", "lr", "logistic_regression"],
      ["b", "lr-1", "lr", "logistic_regression"],
    ]);
  });

  test("shadow models are scored beside the primary and never replace it", () => {
    const scores = scoreRows(task(FORMULA, { models: { formula: FORMULA, lr: LR, gone: undefined as unknown as ModelConfig }, shadowModelKeys: ["lr", "gone"] }, offers));
    for (const s of scores) {
      assert.equal(s.modelKey, "formula");
      close(s.shadowScores!.lr, sigmoid(-1 + 0.01 * (s.offerId === "a" ? 90 : 10)), "shadow score");
      assert.deepEqual(s.shadowErrors, { gone: "model gone is not available" });
      assert.equal(s.degraded, undefined, "a failing shadow does not degrade the decision");
    }
  });

  test("an unavailable primary model degrades every candidate to 0.5", () => {
    const scores = scoreRows({ ...task(LR, {}, offers), modelKey: "champion-v9" });
    for (const s of scores) {
      assert.deepEqual(
        { score: s.score, degraded: s.degraded, reason: s.reason, modelType: s.modelType, propensitySource: s.propensitySource },
        { score: 0.5, degraded: true, reason: "model champion-v9 is not available", modelType: "unavailable", propensitySource: "model" },
      );
    }
  });

  test("a model key that names an Object prototype member is not a model", () => {
    const scores = scoreRows({ ...task(LR), modelKey: "constructor" });
    assert.equal(scores[0].reason, "model constructor is not available");
  });

  test("tasks survive structured cloning unchanged (what the worker receives)", () => {
    const t = task(GB, { customer: { age: 25 }, context: { channel: "email" } }, offers);
    assert.deepEqual(scoreCandidates(structuredClone(t)), scoreCandidates(t));
  });

  test("inline or pool: only tree walks count", () => {
    const many = Array.from({ length: 10 }, (_, i) => ({ id: `o${i}`, priority: 1, businessValue: 1 }));
    const gbTask = task(GB, { models: { gb: GB, lr: LR }, shadowModelKeys: ["lr"] }, many);
    assert.equal(treeWalks(gbTask), 2 * 10);
    assert.equal(chooseScoringPath(gbTask, 20), "pool");
    assert.equal(chooseScoringPath(gbTask, 21), "inline");
    assert.equal(chooseScoringPath(task(LR, {}, many), 0), "inline", "no trees never goes to the pool");
  });
});

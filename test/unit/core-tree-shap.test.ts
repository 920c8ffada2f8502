import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  compileEnsemble,
  explainScoreTask,
  NO_EVIDENCE,
  treeShap,
  type GradientBoostedModel,
  type ModelConfig,
  type ScoreTask,
  type XgbNode,
} from "../../src/core/index.js";

/** A small seeded generator (mulberry32), so a failing case can be replayed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FEATURES = ["f0", "f1", "f2", "f3", "f4"];

/**
 * A random XGBoost dump tree: splits on a few features (repeats on one path included), thresholds
 * in [0, 1), `missing` going either way, leaves in [-1, 1). With `covers`, every node has a cover
 * and an inner node's is its children's sum, as XGBoost writes them; without, no node has one.
 */
function randomTree(next: () => number, maxDepth: number, covers: boolean): XgbNode {
  let id = 0;
  const grow = (depth: number): XgbNode => {
    const nodeid = id++;
    if (depth === maxDepth || (depth > 0 && next() < 0.25)) {
      const leaf: XgbNode = { nodeid, leaf: Math.round((next() * 2 - 1) * 1000) / 1000 };
      if (covers) leaf.cover = 1 + Math.floor(next() * 50);
      return leaf;
    }
    const yes = grow(depth + 1);
    const no = grow(depth + 1);
    const node: XgbNode = {
      nodeid,
      split: FEATURES[Math.floor(next() * 3 + (depth % 2) * 2)],
      split_condition: Math.round(next() * 100) / 100,
      yes: yes.nodeid,
      no: no.nodeid,
      missing: next() < 0.5 ? yes.nodeid : no.nodeid,
      children: [yes, no],
    };
    if (covers) node.cover = (yes.cover as number) + (no.cover as number);
    return node;
  };
  return grow(0);
}

/** An instance over FEATURES: mostly values in [0, 1), sometimes missing (NaN). */
function randomInstance(next: () => number): Float64Array {
  return Float64Array.from(FEATURES, () => (next() < 0.15 ? NaN : Math.round(next() * 100) / 100));
}

/**
 * Algorithm 1 of Lundberg et al. (2018) written independently of tree-shap.ts, over the dump itself:
 * the path-dependent expectation of a tree when only the features in `known` are known. A known
 * feature follows the instance (missing → `missing`, x < threshold → `yes`, else `no`); an unknown
 * one averages the distinct branches by cover (equally when a branch has none).
 */
function expectationGiven(node: XgbNode, x: Float64Array, known: ReadonlySet<string>): number {
  if (node.leaf !== undefined) return node.leaf;
  const child = (id: number | undefined) => node.children!.find((c) => c.nodeid === id)!;
  const feature = node.split!;
  if (known.has(feature)) {
    const v = x[FEATURES.indexOf(feature)];
    return expectationGiven(child(Number.isNaN(v) ? node.missing : v < node.split_condition! ? node.yes : node.no), x, known);
  }
  const branches = [...new Set([node.yes, node.no, node.missing])].map(child);
  const weights = branches.every((b) => b.cover !== undefined) ? branches.map((b) => b.cover!) : branches.map(() => 1);
  const total = weights.reduce((a, b) => a + b, 0);
  return branches.reduce((sum, b, i) => sum + (weights[i] / total) * expectationGiven(b, x, known), 0);
}

/** Exact Shapley values by enumerating every coalition: Σ |S|!(n−|S|−1)!/n! · (v(S ∪ i) − v(S)). */
function bruteForceShapley(trees: XgbNode[], x: Float64Array): number[] {
  const n = FEATURES.length;
  const value = (mask: number) => {
    const known = new Set(FEATURES.filter((_, i) => mask & (1 << i)));
    return trees.reduce((sum, t) => sum + expectationGiven(t, x, known), 0);
  };
  const factorial = (k: number): number => (k <= 1 ? 1 : k * factorial(k - 1));
  const v = Array.from({ length: 1 << n }, (_, mask) => value(mask));
  return FEATURES.map((_, i) => {
    let phi = 0;
    for (let mask = 0; mask < 1 << n; mask++) {
      if (mask & (1 << i)) continue;
      const size = mask.toString(2).split("").filter((b) => b === "1").length;
      phi += ((factorial(size) * factorial(n - size - 1)) / factorial(n)) * (v[mask | (1 << i)] - v[mask]);
    }
    return phi;
  });
}

function ensembleOf(trees: XgbNode[], extra: Partial<GradientBoostedModel> = {}) {
  const compiled = compileEnsemble({ id: "m", key: "m", type: "gradient_boosted", trees, ...extra });
  assert.ok(compiled.ensemble, compiled.errors?.join("; "));
  return compiled.ensemble;
}

/** The instance as the ensemble's own feature order (the features its splits use). */
function aligned(features: readonly string[], x: Float64Array): Float64Array {
  return Float64Array.from(features, (name) => x[FEATURES.indexOf(name)]);
}

describe("TreeSHAP (path-dependent, Algorithm 2)", () => {
  test("equals brute-force Shapley values on random trees, with and without cover, and is additive", () => {
    let cases = 0;
    for (let seed = 1; seed <= 60; seed++) {
      const next = rng(seed);
      const covers = seed % 3 !== 0;
      const trees = Array.from({ length: 1 + Math.floor(next() * 3) }, () => randomTree(next, 2 + Math.floor(next() * 3), covers));
      const ensemble = ensembleOf(trees, { baseScore: 0.3 });
      for (let k = 0; k < 4; k++) {
        const x = randomInstance(next);
        const xa = aligned(ensemble.features, x);
        const result = treeShap(ensemble, xa);
        const expected = bruteForceShapley(trees, x);
        for (const [i, name] of FEATURES.entries()) {
          const at = ensemble.features.indexOf(name);
          const got = at < 0 ? 0 : result.contributions[at];
          assert.ok(Math.abs(got - expected[i]) < 1e-12, `seed ${seed} case ${k} ${name}: TreeSHAP ${got}, brute force ${expected[i]}`);
        }
        const sum = result.contributions.reduce((a, b) => a + b, 0);
        const residual = Math.abs(result.baseValue + sum - ensemble.margin(xa));
        assert.ok(residual < 1e-9, `seed ${seed} case ${k}: additivity residual ${residual}`);
        const empty = trees.reduce((s, t) => s + expectationGiven(t, x, new Set()), ensemble.baseMargin);
        assert.ok(Math.abs(result.baseValue - empty) < 1e-12, `seed ${seed}: base value ${result.baseValue} vs E[f] ${empty}`);
        assert.equal(result.uniformWeights, !covers);
        cases++;
      }
    }
    assert.equal(cases, 240);
  });

  test("one split: the feature gets f(x) − E[f], weighed by cover", () => {
    const tree: XgbNode = {
      nodeid: 0, split: "f0", split_condition: 0.5, yes: 1, no: 2, missing: 2, cover: 4,
      children: [{ nodeid: 1, leaf: 1, cover: 3 }, { nodeid: 2, leaf: -1, cover: 1 }],
    };
    const ensemble = ensembleOf([tree], { objective: "reg:squarederror", baseScore: 0 });
    const low = treeShap(ensemble, Float64Array.of(0.1));
    assert.equal(low.baseValue, 0.5); // 3/4 · 1 + 1/4 · (−1)
    assert.equal(low.contributions[0], 0.5);
    const missing = treeShap(ensemble, Float64Array.of(NaN));
    assert.equal(missing.contributions[0], -1.5);
  });
});

describe("explainScoreTask", () => {
  const tree: XgbNode = {
    nodeid: 0, split: "age", split_condition: 30, yes: 1, no: 2, missing: 1, cover: 10,
    children: [
      { nodeid: 1, leaf: -0.4, cover: 6 },
      { nodeid: 2, split: "price", split_condition: 20, yes: 3, no: 4, missing: 3, cover: 4,
        children: [{ nodeid: 3, leaf: 0.7, cover: 3 }, { nodeid: 4, leaf: 0.1, cover: 1 }] },
    ],
  };
  const model: GradientBoostedModel = {
    id: "gbt-id", key: "gbt", type: "gradient_boosted", trees: [tree], featureMap: { age: "customer.age", price: "offer.revenueValue" },
  };
  const task = (m: ModelConfig): ScoreTask => ({
    candidates: [
      { id: "cheap", priority: 50, businessValue: 10, revenueValue: 10 },
      { id: "dear", priority: 50, businessValue: 10, revenueValue: 90 },
    ],
    customer: { age: 45 },
    context: {},
    models: { [m.key]: m },
    modelKey: m.key,
    shadowModelKeys: [],
    evidence: NO_EVIDENCE,
    clv: null,
    seed: "s",
    explain: false,
  });

  test("every candidate, best first, with the values read, the margin and a residual under 1e-9", () => {
    const { shap } = explainScoreTask(task(model));
    assert.ok(shap);
    assert.deepEqual(shap.candidates.map((c) => c.offerId), ["cheap", "dear"]);
    const [cheap, dear] = shap.candidates;
    assert.equal(cheap.margin, 0.7);
    assert.equal(dear.margin, 0.1);
    assert.ok(Math.abs(cheap.score - 1 / (1 + Math.exp(-0.7))) < 1e-15);
    assert.deepEqual(cheap.contributions.map((c) => [c.feature, c.attribute, c.value]).sort(), [["age", "customer.age", 45], ["price", "offer.revenueValue", 10]]);
    assert.ok(shap.additivityResidual < 1e-9);
    assert.ok(Math.abs(shap.baseValue - (0.6 * -0.4 + 0.4 * (0.75 * 0.7 + 0.25 * 0.1))) < 1e-15);
    assert.equal(shap.uniformWeights, false);
    const noAge = explainScoreTask({ ...task(model), customer: {} }).shap!;
    assert.equal(noAge.candidates[0].contributions.find((c) => c.feature === "age")!.value, null);
  });

  test("a model that is not gradient-boosted, or has no trees, is a problem with its reason", () => {
    assert.equal(explainScoreTask(task({ id: "lr", key: "lr", type: "logistic_regression", intercept: 0, coefficients: {} })).problem?.reason, "MODEL_NOT_GRADIENT_BOOSTED");
    assert.equal(explainScoreTask(task({ ...model, trees: [] })).problem?.reason, "MODEL_HAS_NO_TREES");
    assert.equal(explainScoreTask({ ...task(model), models: {} }).problem?.reason, "MODEL_UNAVAILABLE");
  });
});

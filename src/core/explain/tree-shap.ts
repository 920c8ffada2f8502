/**
 * Exact SHAP values of a tree ensemble in polynomial time: path-dependent TreeSHAP (Lundberg, Erion
 * and Lee 2018, "Consistent Individualized Feature Attribution for Tree Ensembles", Algorithm 2).
 *
 * The value of a feature coalition S is the path-dependent conditional expectation of Algorithm 1:
 * at a split on a feature in S the walk follows the instance's branch; at a split on any other
 * feature it takes every branch, weighted by the share of the training data that went there (the
 * children's `cover`). The Shapley values of that game are computed in O(T·L·D²) by carrying, along
 * each root-to-leaf path, the proportion of coalitions of each size that reach it (EXTEND), and
 * undoing a feature's earlier split when the feature repeats deeper on the path (UNWIND).
 *
 * Weights (docs/explanations.md, "Cover"): a split's branches weigh their own `cover` when every
 * branch has one, normalised over the branches, so the fractions always sum to 1; a split where
 * any branch lacks cover (a dump written without stats) weighs its branches equally, the same rule
 * the Saabas explanations of gradient-boosted.ts use. `uniformWeights` tells the caller that
 * happened, because the values then describe a uniform split of the data, not the training data's.
 *
 * A branch is one of the distinct nodes among `yes`, `no` and `missing`: XGBoost's `missing`
 * always repeats one of the other two, and a hand-written third branch is weighed like them.
 */
import type { TreeNode } from "../scoring/gradient-boosted.js";

/** A split with its branches weighed; leaves keep their value. */
type WeighedNode =
  | { leaf: number }
  | { feature: number; threshold: number; branches: WeighedNode[]; fractions: number[]; yes: number; no: number; missing: number };

export interface TreeShapInput {
  baseMargin: number;
  trees: readonly TreeNode[];
  /** Feature names; `x` and the result are aligned to them. */
  features: readonly string[];
}

export interface TreeShapResult {
  /** The margin expected before any feature is known: base margin plus each tree's expectation. */
  baseValue: number;
  /** One SHAP value per feature, aligned to `features`; they sum to margin(x) − baseValue. */
  contributions: Float64Array;
  /** Some split had a branch without cover, and its branches were weighed equally. */
  uniformWeights: boolean;
}

/** A prepared ensemble, reusable for every candidate of one decision. */
export interface TreeShapExplainer {
  baseValue: number;
  uniformWeights: boolean;
  explain(x: Float64Array): Float64Array;
}

export function treeShapExplainer(input: TreeShapInput): TreeShapExplainer {
  const index = new Map(input.features.map((name, i) => [name, i]));
  const flags = { uniform: false };
  const trees = input.trees.map((tree) => weigh(tree, index, flags));
  const baseValue = trees.reduce((sum, tree) => sum + expectation(tree), input.baseMargin);
  // One region per level of the deepest path, as in the reference implementation: no allocation per node.
  const levels = trees.reduce((max, tree) => Math.max(max, depthOf(tree)), 0) + 2;
  const buffer = pathBuffer((levels * (levels + 1)) / 2 + levels);
  return {
    baseValue,
    uniformWeights: flags.uniform,
    explain(x) {
      const phi = new Float64Array(input.features.length);
      for (const tree of trees) recurse(tree, x, phi, buffer, 0, 0, 1, 1, -1);
      return phi;
    },
  };
}

/** SHAP values of one instance: `x` holds feature values aligned to `features`, NaN where missing. */
export function treeShap(input: TreeShapInput, x: Float64Array): TreeShapResult {
  const explainer = treeShapExplainer(input);
  return { baseValue: explainer.baseValue, contributions: explainer.explain(x), uniformWeights: explainer.uniformWeights };
}

function weigh(node: TreeNode, index: ReadonlyMap<string, number>, flags: { uniform: boolean }): WeighedNode {
  if (!node.split) return { leaf: node.leaf as number };
  const { feature, threshold, yes, no, missing } = node.split;
  const distinct = [...new Set([yes, no, missing])];
  const covered = distinct.every((child) => child.cover !== undefined);
  if (!covered) flags.uniform = true;
  const weights = distinct.map((child) => (covered ? (child.cover as number) : 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const featureIndex = index.get(feature);
  if (featureIndex === undefined) throw new Error(`tree splits on ${feature}, which is not among the explained features`);
  return {
    feature: featureIndex,
    threshold,
    branches: distinct.map((child) => weigh(child, index, flags)),
    fractions: weights.map((w) => w / total),
    yes: distinct.indexOf(yes),
    no: distinct.indexOf(no),
    missing: distinct.indexOf(missing),
  };
}

/** E[f] with no feature known: every split takes all branches by their fractions. */
function expectation(node: WeighedNode): number {
  if ("leaf" in node) return node.leaf;
  return node.branches.reduce((sum, branch, i) => sum + node.fractions[i] * expectation(branch), 0);
}

/** The branch the instance takes: XGBoost's rule (missing when NaN, yes when below the threshold). */
function hotBranch(node: Extract<WeighedNode, { feature: number }>, x: Float64Array): number {
  const v = x[node.feature];
  return v !== v ? node.missing : v < node.threshold ? node.yes : node.no;
}

/** Splits on the longest root-to-leaf path. */
function depthOf(node: WeighedNode): number {
  return "leaf" in node ? 0 : 1 + Math.max(...node.branches.map(depthOf));
}

/**
 * The unique paths of Algorithm 2, element by element in parallel arrays: a split's feature, its
 * zero and one fractions, and the permutation weight. A path of `d + 1` elements starting at `at`
 * occupies slots at..at+d; each recursion level copies its parent's path into the region after it.
 */
interface PathBuffer {
  feature: Int32Array;
  zero: Float64Array;
  one: Float64Array;
  weight: Float64Array;
}

function pathBuffer(size: number): PathBuffer {
  return { feature: new Int32Array(size), zero: new Float64Array(size), one: new Float64Array(size), weight: new Float64Array(size) };
}

/**
 * Algorithm 2's RECURSE. The parent's path starts at `parent` and has `depth` elements; this level
 * copies it to its own region (the paper's m := copy(m)) and extends it with the split that led
 * here: fractions `zero` and `one` on feature `feature` (-1 at the root).
 */
function recurse(node: WeighedNode, x: Float64Array, phi: Float64Array, p: PathBuffer, parent: number, depth: number, zero: number, one: number, feature: number): void {
  const at = parent + depth + 1;
  for (let i = 0; i < depth; i++) {
    p.feature[at + i] = p.feature[parent + i];
    p.zero[at + i] = p.zero[parent + i];
    p.one[at + i] = p.one[parent + i];
    p.weight[at + i] = p.weight[parent + i];
  }
  extend(p, at, depth, zero, one, feature);
  if ("leaf" in node) {
    for (let i = 1; i <= depth; i++) {
      phi[p.feature[at + i]] += unwoundSum(p, at, depth, i) * (p.one[at + i] - p.zero[at + i]) * node.leaf;
    }
    return;
  }
  const hot = hotBranch(node, x);
  let incomingZero = 1;
  let incomingOne = 1;
  let d = depth;
  for (let k = 1; k <= d; k++) {
    if (p.feature[at + k] !== node.feature) continue;
    // The feature split earlier on this path: undo that split and fold its fractions into this one.
    incomingZero = p.zero[at + k];
    incomingOne = p.one[at + k];
    unwind(p, at, d, k);
    d--;
    break;
  }
  for (let i = 0; i < node.branches.length; i++) {
    recurse(node.branches[i], x, phi, p, at, d + 1, node.fractions[i] * incomingZero, i === hot ? incomingOne : 0, node.feature);
  }
}

/** EXTEND: appends element `d` (a split) and updates the weights of coalition sizes. */
function extend(p: PathBuffer, at: number, d: number, zero: number, one: number, feature: number): void {
  p.feature[at + d] = feature;
  p.zero[at + d] = zero;
  p.one[at + d] = one;
  p.weight[at + d] = d === 0 ? 1 : 0;
  for (let i = d - 1; i >= 0; i--) {
    p.weight[at + i + 1] += (one * p.weight[at + i] * (i + 1)) / (d + 1);
    p.weight[at + i] = (zero * p.weight[at + i] * (d - i)) / (d + 1);
  }
}

/** UNWIND: removes element `k` of the path of `d + 1` elements at `at`, undoing its EXTEND. */
function unwind(p: PathBuffer, at: number, d: number, k: number): void {
  const one = p.one[at + k];
  const zero = p.zero[at + k];
  let next = p.weight[at + d];
  for (let i = d - 1; i >= 0; i--) {
    if (one !== 0) {
      const kept = p.weight[at + i];
      p.weight[at + i] = (next * (d + 1)) / ((i + 1) * one);
      next = kept - (p.weight[at + i] * zero * (d - i)) / (d + 1);
    } else {
      p.weight[at + i] = (p.weight[at + i] * (d + 1)) / (zero * (d - i));
    }
  }
  for (let i = k; i < d; i++) {
    p.feature[at + i] = p.feature[at + i + 1];
    p.zero[at + i] = p.zero[at + i + 1];
    p.one[at + i] = p.one[at + i + 1];
  }
}

/** The total permutation weight of the path with element `k` unwound, without changing the path. */
function unwoundSum(p: PathBuffer, at: number, d: number, k: number): number {
  const one = p.one[at + k];
  const zero = p.zero[at + k];
  let next = p.weight[at + d];
  let total = 0;
  for (let i = d - 1; i >= 0; i--) {
    if (one !== 0) {
      const w = (next * (d + 1)) / ((i + 1) * one);
      total += w;
      next = p.weight[at + i] - (w * zero * (d - i)) / (d + 1);
    } else {
      total += p.weight[at + i] / zero / ((d - i) / (d + 1));
    }
  }
  return total;
}

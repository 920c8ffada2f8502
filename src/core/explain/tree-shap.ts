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
  return {
    baseValue,
    uniformWeights: flags.uniform,
    explain(x) {
      const phi = new Float64Array(input.features.length);
      for (const tree of trees) recurse(tree, x, phi, [], 1, 1, -1);
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

/** One element of the unique path: a feature, its zero and one fractions, and its permutation weight. */
interface PathElement {
  feature: number;
  zero: number;
  one: number;
  weight: number;
}

/**
 * Algorithm 2's RECURSE. `parent` is the path down to this node (not modified: each level works on
 * its own copy, as the paper's m := copy(m)); `zero` and `one` are the fractions of the split that
 * led here, on feature `feature` (-1 at the root).
 */
function recurse(node: WeighedNode, x: Float64Array, phi: Float64Array, parent: readonly PathElement[], zero: number, one: number, feature: number): void {
  const path = parent.map((e) => ({ ...e }));
  extend(path, zero, one, feature);
  if ("leaf" in node) {
    for (let i = 1; i < path.length; i++) {
      const e = path[i];
      phi[e.feature] += unwoundSum(path, i) * (e.one - e.zero) * node.leaf;
    }
    return;
  }
  const hot = hotBranch(node, x);
  let incomingZero = 1;
  let incomingOne = 1;
  const seen = path.findIndex((e) => e.feature === node.feature);
  if (seen >= 0) {
    // The feature split earlier on this path: undo that split and fold its fractions into this one.
    incomingZero = path[seen].zero;
    incomingOne = path[seen].one;
    unwind(path, seen);
  }
  node.branches.forEach((branch, i) => {
    recurse(branch, x, phi, path, node.fractions[i] * incomingZero, i === hot ? incomingOne : 0, node.feature);
  });
}

/** EXTEND: appends a split and updates the weights of coalition sizes. */
function extend(path: PathElement[], zero: number, one: number, feature: number): void {
  const depth = path.length;
  path.push({ feature, zero, one, weight: depth === 0 ? 1 : 0 });
  for (let i = depth - 1; i >= 0; i--) {
    path[i + 1].weight += (one * path[i].weight * (i + 1)) / (depth + 1);
    path[i].weight = (zero * path[i].weight * (depth - i)) / (depth + 1);
  }
}

/** UNWIND: removes element `at`, undoing its EXTEND. */
function unwind(path: PathElement[], at: number): void {
  const depth = path.length - 1;
  const { one, zero } = path[at];
  let next = path[depth].weight;
  for (let i = depth - 1; i >= 0; i--) {
    if (one !== 0) {
      const kept = path[i].weight;
      path[i].weight = (next * (depth + 1)) / ((i + 1) * one);
      next = kept - (path[i].weight * zero * (depth - i)) / (depth + 1);
    } else {
      path[i].weight = (path[i].weight * (depth + 1)) / (zero * (depth - i));
    }
  }
  for (let i = at; i < depth; i++) {
    path[i].feature = path[i + 1].feature;
    path[i].zero = path[i + 1].zero;
    path[i].one = path[i + 1].one;
  }
  path.pop();
}

/** The total permutation weight of the path with element `at` unwound, without changing the path. */
function unwoundSum(path: readonly PathElement[], at: number): number {
  const depth = path.length - 1;
  const { one, zero } = path[at];
  let next = path[depth].weight;
  let total = 0;
  for (let i = depth - 1; i >= 0; i--) {
    if (one !== 0) {
      const w = (next * (depth + 1)) / ((i + 1) * one);
      total += w;
      next = path[i].weight - (w * zero * (depth - i)) / (depth + 1);
    } else {
      total += path[i].weight / zero / ((depth - i) / (depth + 1));
    }
  }
  return total;
}

/**
 * Imported gradient-boosted trees in XGBoost's JSON dump format (`dump_model(..., dump_format="json")`
 * or `get_dump(dump_format="json")`). Each split sends a feature value `x` to `yes` when
 * `x < split_condition`, to `no` otherwise, and to `missing` when the feature is absent — XGBoost's
 * own rule. The raw margin is the base margin plus the sum of the reached leaves; logistic
 * objectives then apply the sigmoid. `baseScore` is XGBoost's `base_score`, which it keeps in
 * probability space for logistic objectives, so the base margin is logit(baseScore) there (0 for
 * the default 0.5) and baseScore itself for `reg:squarederror`.
 *
 * Explanations use Saabas path attribution: every node has an expected value (its leaves' values
 * weighted by `cover` when the dump has stats, equally otherwise), and each split on the path
 * credits its feature with E[child] − E[node]. Contributions plus `(bias)` (base margin plus each
 * root's expectation) add up exactly to the margin. They are cheap, not Shapley-exact; the exact
 * SHAP endpoint of spec 4.11 is separate.
 */
import { featureReader, featureVector } from "./features.js";
import { logit, sigmoid } from "./link.js";
import type { GradientBoostedModel, XgbNode } from "./models.js";
import { NO_EXPLANATIONS, numberProblem, setScore, type Compiled, type ModelScore, type ScoringContext } from "./scorer.js";

/** A compiled tree node; `cover` is XGBoost's per-node cover when the dump has stats. */
export interface TreeNode {
  expected: number;
  cover: number | undefined;
  leaf?: number;
  split?: { feature: string; threshold: number; yes: TreeNode; no: TreeNode; missing: TreeNode };
}

const MAX_TREE_DEPTH = 64;
const LOGISTIC_OBJECTIVES = new Set(["binary:logistic", "reg:logistic"]);

/**
 * A validated ensemble: the linked trees (what the exact SHAP explanation walks, src/core/explain),
 * and the margin and feature reading that scoring uses, so an explanation is checked against the
 * very function that scored.
 */
export interface GradientBoostedEnsemble {
  logistic: boolean;
  baseMargin: number;
  trees: TreeNode[];
  /** The model's feature names, in the order of the vectors `readFeatures` fills. */
  features: string[];
  /** Feature values of the context's candidate, NaN where missing; the buffer is reused per call. */
  readFeatures(context: ScoringContext): Float64Array;
  /** The raw margin (before any link function) over feature values read by `readFeatures`. */
  margin(x: Float64Array): number;
}

type Built = { ensemble: GradientBoostedEnsemble; forest: Forest; errors?: undefined } | { errors: string[]; ensemble?: undefined; forest?: undefined };

export function compileEnsemble(model: GradientBoostedModel): { ensemble: GradientBoostedEnsemble; errors?: undefined } | { errors: string[]; ensemble?: undefined } {
  const built = build(model);
  return built.errors ? { errors: built.errors } : { ensemble: built.ensemble };
}

function build(model: GradientBoostedModel): Built {
  const objective = model.objective ?? "binary:logistic";
  const logistic = LOGISTIC_OBJECTIVES.has(objective);
  const baseScore = model.baseScore ?? 0.5;
  const errors: string[] = [];
  if (!logistic && objective !== "reg:squarederror") errors.push(`model.objective: unsupported objective ${String(objective)}`);
  errors.push(...numberProblem(baseScore, "model.baseScore", logistic ? (n) => n > 0 && n < 1 : () => true, logistic ? "a probability in (0, 1)" : "a finite number"));
  if (!Array.isArray(model.trees) || model.trees.length === 0) return { errors: [...errors, "model.trees: must be a non-empty array of trees"] };
  const trees = model.trees.map((tree, i) => compileTree(tree, `model.trees[${i}]`, errors));
  if (errors.length > 0) return { errors };
  const baseMargin = logistic ? logit(baseScore) : baseScore;
  const forest = flatten(trees as TreeNode[]);
  return {
    ensemble: {
      logistic,
      baseMargin,
      trees: trees as TreeNode[],
      features: forest.features,
      readFeatures: featureVector(forest.features.map((name) => featureReader(name, model.featureMap))),
      margin: (x) => walk(forest, baseMargin, x, null),
    },
    forest,
  };
}

export function compileGradientBoosted(model: GradientBoostedModel): Compiled {
  const built = build(model);
  if (built.errors) return { errors: built.errors };
  const { ensemble, forest } = built;
  const { logistic, baseMargin, readFeatures } = ensemble;
  return {
    scorer: {
      score(context: ScoringContext, out: ModelScore): void {
        const x = readFeatures(context);
        if (!context.explain) {
          const margin = walk(forest, baseMargin, x, null);
          const score = logistic ? sigmoid(margin) : margin;
          return setScore(out, score, score, "model", NO_EXPLANATIONS);
        }
        const explained = { contributions: new Float64Array(x.length), met: [] as number[] };
        const margin = walk(forest, baseMargin, x, explained);
        const score = logistic ? sigmoid(margin) : margin;
        const explanations = explanationsOf(baseMargin + forest.rootsExpected, explained.met.map((i) => [forest.features[i], explained.contributions[i]]));
        setScore(out, score, score, "model", explanations);
      },
    },
  };
}

/**
 * The trees flattened into parallel arrays, one slot per node, features by index: a walk is then
 * array reads instead of object and string-keyed lookups, and each feature is read once per
 * candidate (100 trees of depth 4 over 200 candidates are 80,000 node visits per decision).
 */
interface Forest {
  features: string[];
  /** Feature index of a split, -1 for a leaf. */
  feature: Int32Array;
  threshold: Float64Array;
  yes: Int32Array;
  no: Int32Array;
  missing: Int32Array;
  /** Leaf value (leaves only). */
  leaf: Float64Array;
  expected: Float64Array;
  roots: Int32Array;
  /** Sum of the roots' expectations: the trees' part of the Saabas bias. */
  rootsExpected: number;
}

function flatten(trees: TreeNode[]): Forest {
  const nodes: TreeNode[] = [];
  const index = new Map<TreeNode, number>();
  const visit = (node: TreeNode): number => {
    const known = index.get(node);
    if (known !== undefined) return known;
    index.set(node, nodes.length);
    nodes.push(node);
    if (node.split) [node.split.yes, node.split.no, node.split.missing].forEach(visit);
    return index.get(node)!;
  };
  const roots = Int32Array.from(trees.map(visit));
  const features: string[] = [];
  const featureIndex = new Map<string, number>();
  const forest: Forest = {
    features,
    feature: new Int32Array(nodes.length).fill(-1),
    threshold: new Float64Array(nodes.length),
    yes: new Int32Array(nodes.length),
    no: new Int32Array(nodes.length),
    missing: new Int32Array(nodes.length),
    leaf: new Float64Array(nodes.length),
    expected: Float64Array.from(nodes.map((n) => n.expected)),
    roots,
    rootsExpected: trees.reduce((sum, root) => sum + root.expected, 0),
  };
  nodes.forEach((node, i) => {
    if (!node.split) {
      forest.leaf[i] = node.leaf as number;
      return;
    }
    const { feature, threshold, yes, no, missing } = node.split;
    if (!featureIndex.has(feature)) featureIndex.set(feature, features.push(feature) - 1);
    forest.feature[i] = featureIndex.get(feature)!;
    forest.threshold[i] = threshold;
    forest.yes[i] = index.get(yes)!;
    forest.no[i] = index.get(no)!;
    forest.missing[i] = index.get(missing)!;
  });
  return forest;
}

/**
 * The raw margin of a compiled ensemble over feature values `x`; with `explained`, its Saabas
 * decomposition too, features in the order the walks first met them (the order explanations tie in).
 */
function walk(f: Forest, baseMargin: number, x: Float64Array, explained: { contributions: Float64Array; met: number[] } | null): number {
  let margin = baseMargin;
  for (let t = 0; t < f.roots.length; t++) {
    let node = f.roots[t];
    let feature = f.feature[node];
    while (feature >= 0) {
      const v = x[feature];
      const next = v !== v ? f.missing[node] : v < f.threshold[node] ? f.yes[node] : f.no[node];
      if (explained) {
        if (!explained.met.includes(feature)) explained.met.push(feature);
        explained.contributions[feature] += f.expected[next] - f.expected[node];
      }
      node = next;
      feature = f.feature[node];
    }
    margin += f.leaf[node];
  }
  return margin;
}

function explanationsOf(bias: number, contributions: Array<[string, number]>) {
  const features = contributions.map(([field, contribution]) => ({ field, contribution }));
  features.sort((a, b) => Math.abs(b.contribution) - Math.abs(a.contribution));
  return [{ field: "(bias)", contribution: bias }, ...features];
}

/** A dump tree (object or JSON string) to linked nodes; problems are appended to `errors`. */
function compileTree(tree: XgbNode | string, path: string, errors: string[]): TreeNode | undefined {
  let node: unknown = tree;
  if (typeof tree === "string") {
    try {
      node = JSON.parse(tree);
    } catch {
      errors.push(`${path}: is not valid JSON`);
      return undefined;
    }
  }
  return compileNode(node, path, errors, 0);
}

function compileNode(raw: unknown, path: string, errors: string[], depth: number): TreeNode | undefined {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    errors.push(`${path}: must be a tree node object`);
    return undefined;
  }
  if (depth > MAX_TREE_DEPTH) {
    errors.push(`${path}: tree deeper than ${MAX_TREE_DEPTH}`);
    return undefined;
  }
  const node = raw as XgbNode;
  const cover = typeof node.cover === "number" && Number.isFinite(node.cover) && node.cover > 0 ? node.cover : undefined;
  if ("leaf" in node) {
    const problems = numberProblem(node.leaf, `${path}.leaf`);
    errors.push(...problems);
    return problems.length > 0 ? undefined : { expected: node.leaf as number, cover, leaf: node.leaf };
  }
  const before = errors.length;
  if (typeof node.split !== "string" || node.split === "") errors.push(`${path}.split: must be a feature name`);
  errors.push(...numberProblem(node.split_condition, `${path}.split_condition`));
  if (!Array.isArray(node.children) || node.children.length === 0) {
    errors.push(`${path}.children: must list the split's child nodes`);
    return undefined;
  }
  const children = new Map<unknown, TreeNode | undefined>(
    node.children.map((child, i) => [(child as XgbNode | null)?.nodeid, compileNode(child, `${path}.children[${i}]`, errors, depth + 1)]),
  );
  const branch = (name: "yes" | "no" | "missing"): TreeNode | undefined => {
    if (!children.has(node[name])) errors.push(`${path}.${name}: names no child node (${String(node[name])})`);
    return children.get(node[name]);
  };
  const yes = branch("yes");
  const no = branch("no");
  const missing = branch("missing");
  if (errors.length > before || !yes || !no || !missing) return undefined;
  const [wYes, wNo] = yes.cover !== undefined && no.cover !== undefined ? [yes.cover, no.cover] : [1, 1];
  return {
    expected: (wYes * yes.expected + wNo * no.expected) / (wYes + wNo),
    cover,
    split: { feature: node.split as string, threshold: node.split_condition as number, yes, no, missing },
  };
}

/**
 * Model configurations a score node can name (docs/decisioning-core.md, "Scoring"). Native models
 * (`adaptive`, `formula`) learn from or weigh the catalog; imported ones (`logistic_regression`,
 * `gradient_boosted`) are trained elsewhere and uploaded as JSON, so they are validated at compile
 * time and fail soft at scoring time.
 */

export type RegistryStatus = "draft" | "shadow" | "challenger" | "champion" | "archived";

interface ModelBase {
  id: string;
  key: string;
  /**
   * A `champion` serves the flows that name a model of its family; a `shadow` is scored beside its
   * family's serving model and recorded, never ranked (model-lineup.ts).
   */
  registryStatus?: RegistryStatus;
  /** The registry family: the one-champion rule and shadow scoring are per family. */
  family?: string;
}

/** Beta-Bernoulli settings shared by the adaptive model and the formula's propensity term. */
export interface AdaptiveSettings {
  /** Prior successes; default DEFAULT_ADAPTIVE.alpha0. */
  alpha0?: number;
  /** Prior failures; default DEFAULT_ADAPTIVE.beta0. */
  beta0?: number;
  /** Below this many trials the propensity is `cold_start`; default DEFAULT_ADAPTIVE.coldStartTrials. */
  coldStartTrials?: number;
  /** Attribute paths whose values form the context bucket; default none (one bucket, `*`). */
  bucketBy?: string[];
}

export interface AdaptiveModel extends ModelBase, AdaptiveSettings {
  type: "adaptive";
  /** Sample from the posterior (Thompson) instead of using its mean; needs the request seed. */
  thompson?: boolean;
}

export interface FormulaWeights {
  priority: number;
  businessValue: number;
  propensity: number;
  impact: number;
  relevance: number;
}

export interface FormulaModel extends ModelBase {
  type: "formula";
  weights?: Partial<FormulaWeights>;
  /** Exponent weight of the CLV tilt (spec 4.14); 0 (default) turns it off. */
  clvWeight?: number;
  /** Attribute path compared with the offer's productType; default `preferredProductType`. */
  relevanceAttribute?: string;
  /** Revenue at which the impact term is half-saturated; default 100 currency units. */
  revenueScale?: number;
  /** Prior and buckets of the propensity term (posterior mean of the adaptive counts). */
  propensity?: AdaptiveSettings;
}

export interface ImportedModelBase extends ModelBase {
  /** Renames model feature names to attribute paths, e.g. `{"f0": "customer.age"}`. */
  featureMap?: Record<string, string>;
}

export interface LogisticRegressionModel extends ImportedModelBase {
  type: "logistic_regression";
  intercept: number;
  coefficients: Record<string, number>;
}

/** A node of an XGBoost JSON dump: a split or a leaf (`cover` present when dumped with stats). */
export interface XgbNode {
  nodeid: number;
  split?: string;
  split_condition?: number;
  yes?: number;
  no?: number;
  missing?: number;
  children?: XgbNode[];
  leaf?: number;
  cover?: number;
}

export interface GradientBoostedModel extends ImportedModelBase {
  type: "gradient_boosted";
  /** Trees as `dump_model(..., dump_format="json")` writes them, or `get_dump` strings. */
  trees: Array<XgbNode | string>;
  /** XGBoost `base_score`: a probability for logistic objectives, a raw margin otherwise. Default 0.5. */
  baseScore?: number;
  /** Default `binary:logistic`. */
  objective?: "binary:logistic" | "reg:logistic" | "reg:squarederror";
}

export type ModelConfig = AdaptiveModel | FormulaModel | LogisticRegressionModel | GradientBoostedModel;
export type ModelType = ModelConfig["type"];

export const DEFAULT_ADAPTIVE = { alpha0: 1, beta0: 1, coldStartTrials: 20 } as const;

/** The model the default flow scores with: a uniform-prior adaptive model, posterior mean. */
export const DEFAULT_MODEL: AdaptiveModel = { id: "default-adaptive", key: "default-adaptive", type: "adaptive" };

/**
 * What an experiment's holdout is decided with (docs/experiments.md): the flow as configured but
 * without model-driven scoring, each offer scored by its priority alone (priority / 100), so the
 * ranking is the business's own order. Built in: every snapshot adds it last, so no tenant model
 * with the same key can replace it.
 */
export const HOLDOUT_BASELINE_MODEL: FormulaModel = {
  id: "holdout-baseline",
  key: "__holdout_baseline__",
  type: "formula",
  weights: { priority: 1, businessValue: 0, propensity: 0, impact: 0, relevance: 0 },
};

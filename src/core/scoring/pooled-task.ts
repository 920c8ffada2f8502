/**
 * The scoring task as it crosses to a worker thread, and the scores as they come back. A worker
 * keeps what does not change between requests: models, named by a version reference (tenant, model
 * id and a digest of the configuration, made by the sender), and candidate offers, named by a
 * number the sender gives each immutable snapshot view of an offer. A task therefore carries only
 * what changes per request: candidate numbers (a Uint32Array), attributes, counts and the seed.
 * A reference the worker does not hold is answered with `missing`; the sender then sends the task
 * again with those models and offers attached, which the worker keeps from then on. So a worker
 * never scores with a version other than the one the decision names.
 *
 * Scores come back as columns (Float64Array scores and propensities, a Uint8Array of propensity
 * sources) plus the rare per-candidate extras, because cloning 200 result objects each way cost
 * the event loop more than the 20,000 tree walks it sent away (docs/performance.md, "Inline or
 * pool"), and typed arrays clone as one copy each.
 */
import { setNewest } from "../bounded-map.js";
import type { ModelConfig } from "./models.js";
import { scoreCandidates, scoreColumns, type ScoreColumns, type ScoreTask } from "./score-candidates.js";
import type { PropensitySource, ScoringOffer } from "./scorer.js";

export interface PooledScoreTask extends Omit<ScoreTask, "models" | "candidates"> {
  /** Model key → version reference, for every model of the task that exists. */
  modelRefs: Record<string, string>;
  /** The candidates by offer number, in candidate order. */
  candidateRefs: Uint32Array;
  /** Attached after a `missing` answer: the configurations of those references, by model key. */
  models?: Record<string, ModelConfig>;
  /** Attached after a `missing` answer: offers by number. */
  offers?: Record<number, ScoringOffer>;
}

const SOURCES: readonly PropensitySource[] = ["model", "adaptation", "cold_start"];

/** ScoreColumns as they cross between threads: typed arrays, which clone as one copy each. */
export interface PackedScores extends Omit<ScoreColumns, "score" | "propensity" | "propensitySource"> {
  score: Float64Array;
  propensity: Float64Array;
  source: Uint8Array;
}

/** What a worker answers: the scores, or what it does not hold. */
export type PooledScoreResult = { scores: PackedScores } | { missing: { models: string[]; offers: number[] } };

/**
 * Things a worker keeps by reference, least recently used dropped first. A model's configuration
 * object is kept, so the compiled-model cache of score-candidates.ts (keyed by that object) keeps
 * its compiled form as long as the reference stays.
 */
export class RefCache<K, V> {
  private readonly byRef = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(ref: K): V | undefined {
    const value = this.byRef.get(ref);
    if (value !== undefined) {
      // Map order is insertion order: re-inserting marks it as the most recently used.
      this.byRef.delete(ref);
      this.byRef.set(ref, value);
    }
    return value;
  }

  set(ref: K, value: V): void {
    setNewest(this.byRef, ref, value, this.capacity);
  }

  get size(): number {
    return this.byRef.size;
  }
}

/** A worker's models and offers. */
export interface WorkerScoringCache {
  models: RefCache<string, ModelConfig>;
  offers: RefCache<number, ScoringOffer>;
}

export function createWorkerScoringCache(): WorkerScoringCache {
  // A few hundred models and a few tens of thousands of offers: far more than one process's tenants score at once.
  return { models: new RefCache(256), offers: new RefCache(50_000) };
}

/** Scores a pooled task with the cache's models and offers, keeping any the task brings. */
export function scorePooledTask(cache: WorkerScoringCache, task: PooledScoreTask): PooledScoreResult {
  const { modelRefs, candidateRefs, models: attachedModels, offers: attachedOffers, ...rest } = task;
  const models: Record<string, ModelConfig> = {};
  const missingModels: string[] = [];
  for (const key in modelRefs) {
    const attached = attachedModels?.[key];
    if (attached) cache.models.set(modelRefs[key], attached);
    const model = attached ?? cache.models.get(modelRefs[key]);
    if (model) models[key] = model;
    else missingModels.push(modelRefs[key]);
  }
  const candidates = new Array<ScoringOffer>(candidateRefs.length);
  const missingOffers: number[] = [];
  for (let i = 0; i < candidateRefs.length; i++) {
    const ref = candidateRefs[i];
    const attached = attachedOffers?.[ref];
    if (attached) cache.offers.set(ref, attached);
    const offer = attached ?? cache.offers.get(ref);
    if (offer) candidates[i] = offer;
    else missingOffers.push(ref);
  }
  if (missingModels.length || missingOffers.length) return { missing: { models: missingModels, offers: missingOffers } };
  // Object.assign, not a spread copy that gains members: Node 20's V8 takes a slow path for those.
  return { scores: packScores(scoreCandidates(Object.assign({}, rest, { candidates, models }))) };
}

/** Columns → typed arrays, for the way back to the main thread. */
export function packScores(columns: ScoreColumns): PackedScores {
  const n = columns.score.length;
  const packed: PackedScores = {
    modelId: columns.modelId,
    modelKey: columns.modelKey,
    modelType: columns.modelType,
    score: Float64Array.from(columns.score),
    propensity: Float64Array.from(columns.propensity),
    source: new Uint8Array(n),
    extras: columns.extras,
  };
  for (let i = 0; i < n; i++) packed.source[i] = SOURCES.indexOf(columns.propensitySource[i]);
  return packed;
}

/** Typed arrays → columns: what scoreCandidates would have returned. */
export function unpackScores(packed: PackedScores): ScoreColumns {
  const n = packed.score.length;
  const columns = scoreColumns(packed, n, packed.extras);
  for (let i = 0; i < n; i++) {
    columns.score[i] = packed.score[i];
    columns.propensity[i] = packed.propensity[i];
    columns.propensitySource[i] = SOURCES[packed.source[i]];
  }
  return columns;
}

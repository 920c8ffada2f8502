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
 * the event loop more than the 20,000 tree walks it sent away (docs/performance.md, "Inline or pool").
 */
import { setNewest } from "../bounded-map.js";
import type { ModelConfig, ModelType } from "./models.js";
import { scoreCandidates, type CandidateScore, type ScoreTask } from "./score-candidates.js";
import { NO_EXPLANATIONS, type PropensitySource, type ScoringOffer } from "./scorer.js";

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

/** Scores in columns; `extras[i]` holds what candidate i has beyond them, when it has anything. */
export interface PackedScores {
  modelId: string;
  modelKey: string;
  modelType: ModelType | "unavailable";
  score: Float64Array;
  propensity: Float64Array;
  source: Uint8Array;
  extras: Record<number, Partial<CandidateScore>>;
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

/** Scores → columns. The model's names are the task's primary model's, the same on every candidate. */
export function packScores(scores: readonly CandidateScore[]): PackedScores {
  const n = scores.length;
  const packed: PackedScores = {
    modelId: scores[0]?.modelId ?? "",
    modelKey: scores[0]?.modelKey ?? "",
    modelType: scores[0]?.modelType ?? "unavailable",
    score: new Float64Array(n),
    propensity: new Float64Array(n),
    source: new Uint8Array(n),
    extras: {},
  };
  for (let i = 0; i < n; i++) {
    const s = scores[i];
    packed.score[i] = s.score;
    packed.propensity[i] = s.propensity;
    packed.source[i] = SOURCES.indexOf(s.propensitySource);
    if (s.explanations.length || s.degraded || s.shadowScores || s.shadowErrors) {
      const extra: Partial<CandidateScore> = {};
      if (s.explanations.length) extra.explanations = s.explanations;
      if (s.degraded) Object.assign(extra, { degraded: true, reason: s.reason });
      if (s.shadowScores) extra.shadowScores = s.shadowScores;
      if (s.shadowErrors) extra.shadowErrors = s.shadowErrors;
      packed.extras[i] = extra;
    }
  }
  return packed;
}

/** Columns → scores, with the candidates' ids: what scoreCandidates would have returned. */
export function unpackScores(packed: PackedScores, candidates: readonly ScoringOffer[]): CandidateScore[] {
  const out = new Array<CandidateScore>(candidates.length);
  for (let i = 0; i < candidates.length; i++) {
    // The same member order as scoreCandidates builds, so both paths give objects of one shape.
    const score: CandidateScore = {
      offerId: candidates[i].id,
      modelId: packed.modelId,
      modelKey: packed.modelKey,
      modelType: packed.modelType,
      score: packed.score[i],
      propensity: packed.propensity[i],
      propensitySource: SOURCES[packed.source[i]],
      explanations: NO_EXPLANATIONS,
    };
    const extra = packed.extras[i];
    if (extra) Object.assign(score, extra);
    out[i] = score;
  }
  return out;
}

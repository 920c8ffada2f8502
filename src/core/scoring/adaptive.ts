/**
 * The adaptive model: a Beta-Bernoulli posterior per offer and context bucket. With prior
 * Beta(alpha0, beta0) and caller-supplied `{successes, trials}`, the posterior is
 * Beta(alpha0 + successes, beta0 + trials - successes). The score is its mean, so a decision is
 * deterministic; with `thompson: true` it is a draw from the posterior using a generator seeded by
 * `<seed>|<modelKey>|<offerId>`, so the draw replays from the recorded seed and does not depend on
 * which other offers were scored. Below `coldStartTrials` trials the propensity is `cold_start`.
 */
import { resolveAttribute, isMissing, type AttributeBag } from "../attributes.js";
import { canonicalJson } from "../canonical-json.js";
import { fnv1a64 } from "../hash.js";
import { createRandom } from "../random.js";
import { betaMean, sampleBeta } from "./beta.js";
import { positionOf, type EvidenceCounts } from "./evidence-counts.js";
import { DEFAULT_ADAPTIVE, type AdaptiveModel, type AdaptiveSettings } from "./models.js";
import { NO_EXPLANATIONS, numberProblem, setScore, type AdaptiveCount, type Compiled, type Explanation, type ScoringContext, type ScoringOffer } from "./scorer.js";

/** Bucket used when `bucketBy` is empty, and in place of a bucket over the cap (`bucketsOverCap`). */
export const ALL_CONTEXTS_BUCKET = "*";

/**
 * The context bucket: FNV-1a 64 (16 hex digits) of the canonical JSON of `[[path, value], …]` over
 * `bucketBy`, each value as text (a string as is, anything else as its canonical JSON) or null when
 * missing. The values are the caller's (request context, customer attributes), so they never
 * appear in a key raw: a bucket is as long as any other, has no delimiter in it, and two different
 * value lists (`["a,b", "c"]` and `["a", "b,c"]`) or the same values under different paths are
 * different buckets. FNV does not resist a deliberate collision; the most one could do is mix the
 * evidence of two of the tenant's own buckets.
 */
export function contextBucket(bucketBy: readonly string[] | undefined, bag: AttributeBag): string {
  if (!bucketBy || bucketBy.length === 0) return ALL_CONTEXTS_BUCKET;
  return fnv1a64(canonicalJson(bucketBy.map((path) => [path, bucketValue(resolveAttribute(bag, path))])));
}

function bucketValue(value: unknown): string | null {
  if (isMissing(value)) return null;
  return typeof value === "string" ? value : canonicalJson(value);
}

/**
 * The bucket a model counts this request's evidence in: its context bucket, or the all-contexts
 * bucket when the service found that bucket over the tenant's cap (DecisionInput.bucketsOverCap).
 */
export function countingBucket(bucketBy: readonly string[] | undefined, bag: AttributeBag, bucketsOverCap: readonly string[] | undefined): string {
  const bucket = contextBucket(bucketBy, bag);
  return bucketsOverCap?.includes(bucket) ? ALL_CONTEXTS_BUCKET : bucket;
}

/** Names a `bucketBy` list: models bucketed by the same paths share their buckets, and the cap on them. */
export function bucketSpace(bucketBy: readonly string[]): string {
  return fnv1a64(canonicalJson(bucketBy));
}

/** Key of adaptive evidence (EvidenceCounts): `<offerId>|<bucket>`. */
export function adaptiveCountKey(offerId: string, bucket: string): string {
  return `${offerId}|${bucket}`;
}

/**
 * Where an offer's count in a bucket sits in the evidence's key list, kept per offer object and
 * bucket with the list it was found in. The service's key lists are cached per snapshot, so a
 * candidate's count is one lookup away; building and hashing its key string before every lookup
 * was the largest single cost of adaptive scoring. Bounded per offer, so a high-cardinality
 * `bucketBy` cannot grow it without limit.
 */
const positions = new WeakMap<ScoringOffer, Map<string, { keys: readonly string[]; at: number }>>();
const MAX_BUCKETS = 256;

function positionIn(evidence: EvidenceCounts, offer: ScoringOffer, bucket: string): number {
  let byBucket = positions.get(offer);
  if (!byBucket) positions.set(offer, (byBucket = new Map()));
  let position = byBucket.get(bucket);
  if (position === undefined || position.keys !== evidence.keys) {
    if (position === undefined && byBucket.size >= MAX_BUCKETS) byBucket.clear();
    byBucket.set(bucket, (position = { keys: evidence.keys, at: positionOf(evidence, adaptiveCountKey(offer.id, bucket)) }));
  }
  return position.at;
}

/**
 * The same positions for a whole candidate list, by candidate index, kept per list and bucket
 * with the key list they were found in. A decision that drops none of its flow's candidates scores
 * the snapshot's own list (decide.ts), so most decisions find every position in one array instead
 * of two lookups per candidate, which were a quarter of the core's time.
 */
const listPositions = new WeakMap<readonly ScoringOffer[], Map<string, { keys: readonly string[]; at: readonly number[] }>>();
/** The list asked about last: a task's candidates ask one after another. */
let lastList: { candidates: readonly ScoringOffer[]; bucket: string; keys: readonly string[]; at: readonly number[] } | null = null;

function positionsIn(evidence: EvidenceCounts, candidates: readonly ScoringOffer[], bucket: string): readonly number[] {
  if (lastList !== null && lastList.candidates === candidates && lastList.bucket === bucket && lastList.keys === evidence.keys) return lastList.at;
  let byBucket = listPositions.get(candidates);
  if (!byBucket) listPositions.set(candidates, (byBucket = new Map()));
  let entry = byBucket.get(bucket);
  if (entry === undefined || entry.keys !== evidence.keys) {
    if (entry === undefined && byBucket.size >= MAX_BUCKETS) byBucket.clear();
    byBucket.set(bucket, (entry = { keys: evidence.keys, at: candidates.map((offer) => positionIn(evidence, offer, bucket)) }));
  }
  lastList = { candidates, bucket, keys: evidence.keys, at: entry.at };
  return entry.at;
}

function countIn(context: ScoringContext, bucket: string): AdaptiveCount | undefined {
  const at = positionsIn(context.evidence, context.candidates, bucket)[context.index];
  return at < 0 ? undefined : (context.evidence.counts[at] ?? undefined);
}

/**
 * The request's bucket for `bucketBy`, once per scoring context (ScoringContext): it reads the
 * customer and the request context only, as the service does when it reads and counts evidence,
 * so it is the same for every candidate.
 */
const requestBuckets = new WeakMap<ScoringContext, Map<readonly string[], string>>();

function requestBucket(bucketBy: readonly string[] | undefined, context: ScoringContext): string {
  if (!bucketBy || bucketBy.length === 0) return ALL_CONTEXTS_BUCKET;
  let byPaths = requestBuckets.get(context);
  if (!byPaths) requestBuckets.set(context, (byPaths = new Map()));
  let bucket = byPaths.get(bucketBy);
  if (bucket === undefined) {
    byPaths.set(bucketBy, (bucket = countingBucket(bucketBy, { customer: context.bag.customer, context: context.bag.context }, context.bucketsOverCap)));
  }
  return bucket;
}

export interface Posterior {
  alpha: number;
  beta: number;
  trials: number;
  source: "adaptation" | "cold_start";
}

/**
 * The posterior of the context's offer in the request's bucket, written into `into`; no counts
 * means the prior alone. A scorer keeps one Posterior (posteriorSlot) and reads it before its next
 * call: a posterior allocated per candidate was half of what adaptive scoring allocated.
 */
export function posteriorFor(settings: AdaptiveSettings, context: ScoringContext, into: Posterior): Posterior {
  const alpha0 = settings.alpha0 ?? DEFAULT_ADAPTIVE.alpha0;
  const beta0 = settings.beta0 ?? DEFAULT_ADAPTIVE.beta0;
  const bucket = requestBucket(settings.bucketBy, context);
  const { successes, trials } = checkedCount(countIn(context, bucket), context.offer.id, bucket);
  into.alpha = alpha0 + successes;
  into.beta = beta0 + trials - successes;
  into.trials = trials;
  into.source = trials < (settings.coldStartTrials ?? DEFAULT_ADAPTIVE.coldStartTrials) ? "cold_start" : "adaptation";
  return into;
}

/** A Posterior for posteriorFor to fill; its numbers start as doubles, so that writing one never changes its shape. */
export function posteriorSlot(): Posterior {
  return { alpha: 0.5, beta: 0.5, trials: 0, source: "cold_start" };
}

/**
 * The posterior mean split into what the prior and the observed successes put in:
 * alpha0/(alpha0+beta0+n) + successes/(alpha0+beta0+n).
 */
export function posteriorExplanations(settings: AdaptiveSettings, posterior: Posterior): Explanation[] {
  const total = posterior.alpha + posterior.beta;
  const alpha0 = settings.alpha0 ?? DEFAULT_ADAPTIVE.alpha0;
  return [
    { field: "prior", contribution: alpha0 / total },
    { field: "observed_successes", contribution: (posterior.alpha - alpha0) / total },
  ];
}

export function validateAdaptiveSettings(settings: AdaptiveSettings, path: string): string[] {
  const positive = (n: number) => n > 0;
  return [
    ...(settings.alpha0 === undefined ? [] : numberProblem(settings.alpha0, `${path}.alpha0`, positive, "a positive number")),
    ...(settings.beta0 === undefined ? [] : numberProblem(settings.beta0, `${path}.beta0`, positive, "a positive number")),
    ...(settings.coldStartTrials === undefined
      ? []
      : numberProblem(settings.coldStartTrials, `${path}.coldStartTrials`, (n) => n >= 0, "a number >= 0")),
    ...(settings.bucketBy === undefined || (Array.isArray(settings.bucketBy) && settings.bucketBy.every((p) => typeof p === "string"))
      ? []
      : [`${path}.bucketBy: must be an array of attribute paths`]),
    // Evidence is kept per offer already; a bucket is what the request adds (customer, context).
    ...(Array.isArray(settings.bucketBy) ? settings.bucketBy : []).flatMap((p, i) =>
      typeof p === "string" && (p === "offer" || p.startsWith("offer."))
        ? [`${path}.bucketBy[${i}]: must name a customer or request-context attribute, not an offer field (evidence is kept per offer already)`]
        : [],
    ),
  ];
}

export function compileAdaptive(model: AdaptiveModel): Compiled {
  const errors = validateAdaptiveSettings(model, "model");
  if (errors.length > 0) return { errors };
  const slot = posteriorSlot();
  return {
    scorer: {
      score(context, out) {
        const posterior = posteriorFor(model, context, slot);
        const mean = betaMean(posterior.alpha, posterior.beta);
        const score = model.thompson
          ? sampleBeta(posterior.alpha, posterior.beta, createRandom(`${context.seed}|${model.key}|${context.offer.id}`))
          : mean;
        if (!context.explain) return setScore(out, score, score, posterior.source, NO_EXPLANATIONS);
        const explanations = posteriorExplanations(model, posterior);
        if (model.thompson) explanations.push({ field: "thompson_sample", contribution: score - mean });
        setScore(out, score, score, posterior.source, explanations);
      },
    },
  };
}

const NOTHING_COUNTED: AdaptiveCount = Object.freeze({ successes: 0, trials: 0 });

function checkedCount(count: AdaptiveCount | undefined, offerId: string, bucket: string): AdaptiveCount {
  if (count === undefined) return NOTHING_COUNTED;
  const { successes, trials } = count;
  if (!(Number.isFinite(successes) && Number.isFinite(trials) && successes >= 0 && successes <= trials)) {
    throw new Error(`adaptive counts ${adaptiveCountKey(offerId, bucket)} are inconsistent: ${successes}/${trials}`);
  }
  return count;
}

/**
 * The facts a narrative may use, taken from a decision trace (spec 2.16) and nothing else. Whatever
 * writes the narrative, a language model included, sees exactly these facts, and the response
 * returns them, so a reader can check every sentence against them.
 *
 * Data minimisation: the customer id and the customer's and request's attributes are left out,
 * except the attributes that are themselves among the top scoring factors shown (a narrative that
 * says "your age raised the score" may say the age). Traces of every vintage are read: replayed
 * ones and the explanations stored before replay records, whose rows used slightly other names.
 */
import { resolveAttribute, type AttributeBag } from "../core/index.js";

/** At most this many offers, factors and examples, so a narrative stays about what mattered. */
const MAX_SCORED = 5;
const MAX_FACTORS = 3;
const MAX_EXAMPLES = 3;

export interface NarrativeFacts {
  decision: {
    traceId: string;
    recommendationId: string;
    decidedAt: string | null;
    flowId: string | null;
    degradedScoring: boolean;
    experimentVariant: string | null;
    inputsHash: string;
    policyVersionHash: string;
  };
  selectedOffers: Array<{ rank: number; offerId: string; offerName: string | null; score: number | null }>;
  /** The best-scored candidates, best first, with the factors that moved each score most. */
  scoring: Array<{
    offerId: string;
    offerName: string | null;
    score: number | null;
    modelId: string | null;
    modelType: string | null;
    propensitySource: string | null;
    degraded: boolean;
    degradedReason: string | null;
    topFactors: Array<{ field: string; contribution: number }>;
  }>;
  candidatesScored: number;
  stages: {
    eligibility: { evaluated: number; passed: number; failed: number; skipped: number };
    contactPolicy: { evaluated: number; blocked: number };
    rejections: Array<{ stage: string; count: number; examples: Array<{ offerName: string | null; reason: string | null }> }>;
  };
  /** Values of the attributes named by the top factors, where the trace's inputs hold them. */
  factorValues: Record<string, unknown>;
}

type Json = Record<string, unknown>;

const list = (v: unknown): Json[] => (Array.isArray(v) ? (v.filter((x) => typeof x === "object" && x !== null) as Json[]) : []);
const str = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);
const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? round(v) : null);
/** Four decimals: what a sentence can use; the trace keeps the full values. */
const round = (n: number) => Math.round(n * 1e4) / 1e4;

/** The facts of a trace given as the JSON of the DecisionTrace message. */
export function narrativeFacts(trace: Json): NarrativeFacts {
  const names = new Map<string, string>();
  for (const row of [...list(trace.scoringResults), ...list(trace.selectedOffers), ...list(trace.rejectedOffers)]) {
    const name = str(row.offerName) ?? str(row.name);
    if (typeof row.offerId === "string" && name) names.set(row.offerId, name);
  }
  const nameOf = (id: unknown) => (typeof id === "string" ? (names.get(id) ?? null) : null);

  const scored = list(trace.scoringResults);
  const selected = list(trace.selectedOffers);
  const scoring = [...scored]
    .sort((a, b) => (num(b.score) ?? -Infinity) - (num(a.score) ?? -Infinity))
    .slice(0, MAX_SCORED)
    .map((row) => ({
      offerId: String(row.offerId),
      offerName: nameOf(row.offerId),
      score: num(row.score),
      modelId: str(row.modelId),
      modelType: str(row.modelType),
      propensitySource: str(row.propensitySource),
      degraded: row.degraded === true,
      degradedReason: row.degraded === true ? str(row.reason) : null,
      topFactors: list(row.explanations)
        .filter((e) => typeof e.field === "string" && e.field !== "(bias)" && typeof e.contribution === "number" && e.contribution !== 0)
        .sort((a, b) => Math.abs(b.contribution as number) - Math.abs(a.contribution as number))
        .slice(0, MAX_FACTORS)
        .map((e) => ({ field: e.field as string, contribution: round(e.contribution as number) })),
    }));

  const qualification = list(trace.qualificationResults);
  // Rows written before replay records said `qualified`; today's say `passed`.
  const passedOf = (q: Json) => (typeof q.passed === "boolean" ? q.passed : q.qualified === true);
  const contact = list(trace.contactPolicyResults);
  const rejected = list(trace.rejectedOffers);
  const stages = [...new Set(rejected.map((r) => String(r.stage)))];

  const inputs = (typeof trace.inputs === "object" && trace.inputs !== null ? trace.inputs : {}) as Json;
  const bag: AttributeBag = { customer: (inputs.customer as Json) ?? {}, context: (inputs.context as Json) ?? {} };
  const factorValues: Record<string, unknown> = {};
  for (const factor of scoring.flatMap((s) => s.topFactors)) {
    const path = factor.field.split("=")[0];
    if (path.startsWith("offer.")) continue;
    const value = resolveAttribute(bag, path);
    if (value !== undefined && (typeof value !== "object" || value === null)) factorValues[path] = value;
  }

  const experiment = trace.experiment as Json | null | undefined;
  return {
    decision: {
      traceId: String(trace.id),
      recommendationId: String(trace.recommendationId),
      decidedAt: str(inputs.now) ?? str(trace.createdAt),
      flowId: str(trace.flowId),
      degradedScoring: trace.degradedScoring === true,
      experimentVariant: experiment ? str(experiment.variant) : null,
      inputsHash: String(trace.inputsHash ?? ""),
      policyVersionHash: String(trace.policyVersionHash ?? ""),
    },
    selectedOffers: selected.map((o, i) => ({
      rank: typeof o.rank === "number" ? o.rank : i + 1,
      offerId: String(o.offerId),
      offerName: nameOf(o.offerId),
      score: num(o.score),
    })),
    scoring,
    candidatesScored: scored.length,
    stages: {
      eligibility: eligibility(qualification.map((q) => ({ offerId: q.offerId, passed: passedOf(q), skipped: q.skipped === true }))),
      contactPolicy: { evaluated: contact.length, blocked: contact.filter((c) => c.blocked === true).length },
      rejections: stages.map((stage) => {
        const rows = rejected.filter((r) => String(r.stage) === stage);
        return {
          stage,
          count: rows.length,
          examples: rows.slice(0, MAX_EXAMPLES).map((r) => ({ offerName: nameOf(r.offerId), reason: str(r.reason) })),
        };
      }),
    },
    factorValues,
  };
}

/** Offers, not rows: an offer has a row per rule, and fails when any of its rules failed. */
function eligibility(rows: Array<{ offerId: unknown; passed: boolean; skipped: boolean }>) {
  const evaluated = new Set(rows.map((r) => r.offerId));
  const failed = new Set(rows.filter((r) => !r.passed).map((r) => r.offerId));
  return { evaluated: evaluated.size, passed: evaluated.size - failed.size, failed: failed.size, skipped: rows.filter((r) => r.skipped).length };
}

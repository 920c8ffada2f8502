/**
 * A decision trace as stored: its replay record. The core is a pure function of (snapshot, input),
 * so a trace keeps the inputs the stages read, names the configuration version they ran against
 * (policyVersionHash, stored once per version in decision_policies), and adds only what the moment
 * alone knew: the offers returned after reservations and the ones a concurrent decision refused.
 * Reading a trace re-runs the decision with explanations on and renders spec 2.16 from it.
 *
 * Why: the explanation of a 200-offer decision is ~200 KB of JSON (scores with field
 * contributions, every qualification and contact-policy row); its record is ~3 KB. Building and
 * serializing the explanation on every decision cost more CPU than the decision itself, while
 * traces are read one at a time (docs/adr/0004-traces-as-replay-records.md).
 */
import { createHash } from "node:crypto";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { DecisionTraceSchema, type DecisionTrace } from "../../gen/decisioning/v1/decisions_pb.js";
import {
  canonicalJson,
  completeDecision,
  evidenceKeys,
  evidenceRecord,
  NO_EVIDENCE,
  prepareDecision,
  scoreCandidates,
  type Decision,
  type DecisionInput,
  type DecisionSnapshot,
  type RankedOffer,
  type RecentOutcome,
  type Rejection,
  type ScoreTask,
} from "../core/index.js";
import type { ClvInput } from "../core/scoring/impact.js";
import type { TraceRow } from "./decision-store.js";
import type { ExperimentArm } from "./experiment-arms.js";
import { experimentAssignment } from "./decision-mapper.js";
import { packEvidence, unpackEvidence, type RecordedEvidence } from "./packed-evidence.js";

/** The inputs of DecisionInput in a compact, JSON-safe form. */
export interface RecordedInputs {
  customerId: string;
  customer: Record<string, unknown>;
  context: Record<string, unknown>;
  channel: string | null;
  placements: string[];
  flowId: string | null;
  modelKey: string | null;
  count: number | null;
  now: string;
  seed: string;
  counters: Record<string, number>;
  /** Adaptive evidence in the order of evidenceKeys(snapshot, input), packed (packed-evidence.ts). */
  evidence: RecordedEvidence;
  /** Context buckets over the tenant's cap, which counted in the all-contexts bucket; absent when none. */
  bucketsOverCap?: string[];
  recentOutcomes: RecentOutcome[];
  clv: ClvInput | null;
}

export type SelectedOffer = Omit<RankedOffer, "reservations" | "options">;

export interface TraceRecord {
  inputs: RecordedInputs;
  /** What was returned, after reservations. */
  selectedOffers: SelectedOffer[];
  /** Offers whose caps or budgets a concurrent decision took first: the one thing a replay cannot know. */
  refusals: Rejection[];
  /** The experiment that covered the decision; its variant's model is `inputs.modelKey`. Absent when none. */
  experiment?: Pick<ExperimentArm, "id" | "key" | "variant">;
  /** The OpenTelemetry trace of the request that decided, when tracing was on; outside the inputs, so outside inputsHash. */
  otelTraceId?: string;
}

/**
 * The record of a decision. Its evidence is recorded in the order it was read, which must be that
 * of evidenceKeys(snapshot, input), as readDecisionInput reads it: a replay rebuilds the keys.
 */
export function traceRecord(
  input: DecisionInput,
  offers: RankedOffer[],
  refusals: Rejection[],
  experiment: ExperimentArm | null = null,
  otelTraceId?: string,
): TraceRecord {
  return {
    inputs: {
      customerId: input.customerId,
      customer: input.customer,
      context: input.context,
      channel: input.channel ?? null,
      placements: input.placements ?? [],
      flowId: input.flowId ?? null,
      modelKey: input.modelKey ?? null,
      count: input.count ?? null,
      now: input.now,
      seed: input.seed,
      counters: input.counters ?? {},
      evidence: packEvidence((input.evidence ?? NO_EVIDENCE).counts),
      ...(input.bucketsOverCap?.length && { bucketsOverCap: input.bucketsOverCap }),
      recentOutcomes: input.recentOutcomes ?? [],
      clv: input.clv,
    },
    selectedOffers: offers.map(selectedOffer),
    refusals,
    ...(experiment && { experiment: { id: experiment.id, key: experiment.key, variant: experiment.variant } }),
    ...(otelTraceId && { otelTraceId }),
  };
}

/**
 * A returned offer as a record keeps it: members named, not `({ reservations, options, ...o }) => o`,
 * whose rest copy V8 builds as a slow dictionary object, about 1 KB for each offer.
 */
function selectedOffer(o: RankedOffer): SelectedOffer {
  return {
    position: o.position,
    offerId: o.offerId,
    offerName: o.offerName,
    categoryId: o.categoryId,
    mandatory: o.mandatory,
    score: o.score,
    rankScore: o.rankScore,
    propensity: o.propensity,
    propensitySource: o.propensitySource,
    creativeId: o.creativeId,
    channelId: o.channelId,
    placementId: o.placementId,
    rank: o.rank,
  };
}

/**
 * How each member of RecordedInputs is written in its canonical JSON: values of known shape
 * (strings, numbers, lists of them, the packed evidence) by JSON.stringify as they are, the
 * caller's maps through canonicalJson. A member added to RecordedInputs does not compile until it
 * has a writer here.
 */
const INPUT_WRITERS: { [K in keyof Required<RecordedInputs>]: (value: NonNullable<RecordedInputs[K]> | null) => string } = {
  bucketsOverCap: JSON.stringify,
  channel: JSON.stringify,
  clv: canonicalJson,
  context: canonicalJson,
  count: JSON.stringify,
  counters: canonicalJson,
  customer: canonicalJson,
  customerId: JSON.stringify,
  evidence: evidenceJson,
  flowId: JSON.stringify,
  modelKey: JSON.stringify,
  now: JSON.stringify,
  placements: JSON.stringify,
  recentOutcomes: canonicalJson,
  seed: JSON.stringify,
};
/** Packed evidence is base64 behind a tag, which JSON never escapes: quoted as it is, not scanned (6 µs for 200 offers). */
function evidenceJson(evidence: RecordedEvidence | null): string {
  return typeof evidence === "string" ? `"${evidence}"` : JSON.stringify(evidence);
}

const INPUT_MEMBERS = (Object.keys(INPUT_WRITERS) as Array<keyof RecordedInputs>).sort().map((key) => ({ key, prefix: `${JSON.stringify(key)}:` }));

/** canonicalJson(inputs), member by member in code-unit order; members that are undefined are left out, as there. */
export function recordedInputsJson(inputs: RecordedInputs): string {
  let json = "";
  for (const { key, prefix } of INPUT_MEMBERS) {
    const value = inputs[key];
    if (value === undefined) continue;
    json += (json ? "," : "{") + prefix + (INPUT_WRITERS[key] as (v: unknown) => string)(value);
  }
  return json ? `${json}}` : "{}";
}

const INPUTS_HEAD = '{"inputs":';

/**
 * The stored JSON of a record, as UTF-8 bytes, and its inputsHash, with the inputs (most of a
 * record) written once for both; the stored JSON parses back to the same record.
 *
 * The inputsHash is SHA-256 (hex) of the canonical JSON (RFC 8785 order: keys sorted) of the
 * configuration version and the recorded inputs, what a replay must match: `{"inputs":…,
 * "policyVersionHash":…}`, whose first part is the stored JSON's own first part, so the hash reads
 * those bytes. The pieces are written into one buffer rather than joined into one string first:
 * each join copied the few KB of a record once more on the heap. (The service may use node:crypto
 * where the core may not, and a native hash of a few KB costs a tenth of FNV in JavaScript.)
 */
export function serializeRecord(policyVersionHash: string, record: TraceRecord): { bytes: Buffer; inputsHash: string } {
  const { inputs, ...rest } = record;
  const inputsJson = recordedInputsJson(inputs);
  // `rest` always has members (the offers and refusals), so its text after "{" continues the object.
  const restJson = JSON.stringify(rest).slice(1);
  const bytes = Buffer.allocUnsafe(INPUTS_HEAD.length + Buffer.byteLength(inputsJson) + 1 + Buffer.byteLength(restJson));
  const inputsEnd = bytes.write(INPUTS_HEAD) + bytes.write(inputsJson, INPUTS_HEAD.length);
  const end = inputsEnd + bytes.write(",", inputsEnd) + bytes.write(restJson, inputsEnd + 1);
  // The buffer is not zeroed: every byte of it must have been written, or old memory would be stored.
  if (end !== bytes.length) throw new Error(`trace record: wrote ${end} of ${bytes.length} bytes`);
  const inputsHash = createHash("sha256")
    .update(bytes.subarray(0, inputsEnd))
    .update(`,"policyVersionHash":${JSON.stringify(policyVersionHash)}}`)
    .digest("hex");
  return { bytes, inputsHash };
}

/** The core's input again, its evidence map rebuilt against the snapshot the decision ran with. */
export function replayInput(snapshot: DecisionSnapshot, inputs: RecordedInputs): DecisionInput {
  const { evidence, flowId, modelKey, count, ...rest } = inputs;
  const input: DecisionInput = {
    ...rest,
    ...(flowId !== null && { flowId }),
    ...(modelKey !== null && { modelKey }),
    ...(count !== null && { count }),
    explain: true,
  };
  const keys = evidenceKeys(snapshot, input);
  const recorded = unpackEvidence(evidence);
  return { ...input, evidence: { keys, counts: keys.map((_, i) => recorded[i] ?? null) } };
}

/**
 * Re-runs the decision and renders the trace of spec 2.16; `decision` is returned for checks, and
 * `scoreTask` (what the decision scored: models, candidates, attributes) for explanations.
 */
export function renderTrace(
  row: Omit<TraceRow, "trace">,
  record: TraceRecord,
  snapshot: DecisionSnapshot,
): { trace: DecisionTrace; decision: Decision; scoreTask: ScoreTask } {
  const input = replayInput(snapshot, record.inputs);
  // decide(), in its two halves, to keep the task it scored.
  const prepared = prepareDecision(snapshot, input);
  const decision = completeDecision(prepared, scoreCandidates(prepared.scoreTask));
  const { evidence: _evidence, ...shown } = record.inputs;
  const trace = traceMessage(row, {
    scoringResults: decision.scoringResults,
    selectedOffers: record.selectedOffers,
    qualificationResults: decision.qualificationResults,
    contactPolicyResults: decision.contactPolicyResults,
    rejectedOffers: [...decision.rejectedOffers, ...record.refusals],
    rankingWeights: decision.rankingWeights,
    inputs: { ...shown, adaptiveCounts: evidenceRecord(input.evidence ?? NO_EVIDENCE) },
    ...(record.experiment && { experiment: experimentAssignment(record.experiment) }),
    ...(record.otelTraceId && { otelTraceId: record.otelTraceId }),
  });
  return { trace, decision, scoreTask: prepared.scoreTask };
}

/** The explanation parts of spec 2.16, replayed or as stored before replay records (stored-explanation.ts). */
export interface TraceExplanation {
  scoringResults: unknown[];
  selectedOffers: unknown[];
  qualificationResults: unknown[];
  contactPolicyResults: unknown[];
  rejectedOffers: unknown[];
  rankingWeights: unknown;
  inputs: unknown;
  experiment?: ReturnType<typeof experimentAssignment>;
  otelTraceId?: string;
}

/** The trace message: the row's columns and an explanation, through JSON so that any plain value fits. */
export function traceMessage(row: Omit<TraceRow, "trace">, explanation: TraceExplanation): DecisionTrace {
  return fromJson(
    DecisionTraceSchema,
    JSON.parse(
      JSON.stringify({
        id: row.id,
        recommendationId: row.recommendation_id,
        customerId: row.customer_id,
        flowId: row.flow_id,
        ...explanation,
        degradedScoring: row.degraded_scoring,
        inputsHash: row.inputs_hash,
        policyVersionHash: row.policy_version_hash,
        createdAt: row.created_at.toISOString(),
      }),
    ) as JsonValue,
  );
}

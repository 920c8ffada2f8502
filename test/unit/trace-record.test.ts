import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { canonicalJson, decide, evidenceKeys, NO_EVIDENCE, positionOf, prepareSnapshot, type DecisionInput, type SnapshotConfig } from "../../src/core/index.js";
import { packEvidence, unpackEvidence } from "../../src/decisions/packed-evidence.js";
import { recordedInputsJson, renderTrace, replayInput, serializeRecord, traceRecord, type TraceRecord } from "../../src/decisions/trace-record.js";

/**
 * A trace is stored as its replay record and explained by re-running the decision (ADR 4): for
 * every golden case, the record survives JSON, rebuilds the input, and the replay is the decision.
 */
const casesDir = join(import.meta.dirname, "../cases");
const cases = readdirSync(casesDir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((file) => ({ name: file, golden: JSON.parse(readFileSync(join(casesDir, file), "utf8")) as { snapshot: SnapshotConfig; input: DecisionInput } }));

const stored = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

/** The inputsHash as defined: SHA-256 of the canonical JSON of {policyVersionHash, inputs}. */
const definedHash = (policyVersionHash: string, inputs: TraceRecord["inputs"]) =>
  createHash("sha256").update(canonicalJson({ policyVersionHash, inputs })).digest("hex");

/** The inputsHash the service stores with a record of these inputs. */
const inputsHash = (policyVersionHash: string, inputs: TraceRecord["inputs"]) =>
  serializeRecord(policyVersionHash, { inputs, selectedOffers: [], refusals: [] }).inputsHash;

function recorded(snapshot: ReturnType<typeof prepareSnapshot>, input: DecisionInput) {
  const keys = evidenceKeys(snapshot, input);
  // The service reads exactly these keys, so the input it decides with holds no others.
  const given = input.evidence ?? NO_EVIDENCE;
  const counts = keys.map((k) => given.counts[positionOf(given, k)] ?? null);
  const served: DecisionInput = { ...input, explain: false, evidence: { keys, counts } };
  const decision = decide(snapshot, served);
  return { served, decision, record: stored(traceRecord(served, decision.offers, [])) };
}

const row = (record: TraceRecord, policyVersionHash: string) => ({
  tenant_id: "00000000-0000-4000-8000-000000000001",
  id: "00000000-0000-4000-8000-000000000002",
  recommendation_id: "00000000-0000-4000-8000-000000000003",
  customer_id: record.inputs.customerId,
  flow_id: null,
  degraded_scoring: false,
  selected_count: record.selectedOffers.length,
  rejected_count: 0,
  inputs_hash: inputsHash(policyVersionHash, record.inputs),
  policy_version_hash: policyVersionHash,
  created_at: new Date("2024-06-01T12:00:00Z"),
});

describe("trace records (ADR 4)", () => {
  for (const { name, golden } of cases) {
    test(`${name}: the stored record replays the decision exactly, explained`, () => {
      const snapshot = prepareSnapshot(golden.snapshot);
      const { served, decision, record } = recorded(snapshot, golden.input);
      const replayed = replayInput(snapshot, record.inputs);
      assert.deepEqual(replayed.evidence, served.evidence);
      const { trace, decision: again } = renderTrace(row(record, snapshot.policyVersionHash), record, snapshot);
      assert.deepEqual(again.offers, decision.offers);
      assert.deepEqual(again, decide(snapshot, { ...served, explain: true }));
      assert.equal(trace.selectedOffers?.values.length, decision.offers.length);
      assert.equal(trace.rejectedOffers?.values.length, decision.rejectedCount);
      // A configuration stored as JSON compiles to the same version.
      assert.equal(prepareSnapshot(stored(snapshot.config)).policyVersionHash, snapshot.policyVersionHash);
    });
  }

  test("a record written before packed evidence, with [successes, trials] pairs, replays the same input", () => {
    for (const { golden } of cases) {
      const snapshot = prepareSnapshot(golden.snapshot);
      const { served, record } = recorded(snapshot, golden.input);
      const pairs = unpackEvidence(record.inputs.evidence).map((c) => (c ? ([c.successes, c.trials] as [number, number]) : null));
      assert.deepEqual(replayInput(snapshot, { ...record.inputs, evidence: pairs }).evidence, served.evidence);
    }
  });

  test("inputsHash changes with any recorded input and with the configuration version, not with a JSON round trip", () => {
    const golden = cases.find((c) => c.name.startsWith("09-"))!.golden;
    const snapshot = prepareSnapshot(golden.snapshot);
    const { record } = recorded(snapshot, golden.input);
    const base = inputsHash(snapshot.policyVersionHash, record.inputs);
    assert.match(base, /^[0-9a-f]{64}$/);
    assert.equal(inputsHash(snapshot.policyVersionHash, stored(record.inputs)), base);
    assert.notEqual(inputsHash(snapshot.policyVersionHash, { ...record.inputs, seed: "other" }), base);
    assert.notEqual(inputsHash(snapshot.policyVersionHash, { ...record.inputs, counters: { x: 1 } }), base);
    assert.notEqual(inputsHash(snapshot.policyVersionHash, { ...record.inputs, evidence: packEvidence(unpackEvidence(record.inputs.evidence).map(() => ({ successes: 1, trials: 2 }))) }), base);
    assert.notEqual(inputsHash("0000000000000000", record.inputs), base);
    assert.equal(base, definedHash(snapshot.policyVersionHash, record.inputs), "SHA-256 of the canonical JSON of {policyVersionHash, inputs}");
  });

  test("the stored JSON parses back to the record and carries the same inputsHash", () => {
    for (const { golden } of cases) {
      const snapshot = prepareSnapshot(golden.snapshot);
      const { record } = recorded(snapshot, golden.input);
      const { bytes, inputsHash: hash } = serializeRecord(snapshot.policyVersionHash, record);
      assert.deepEqual(JSON.parse(bytes.toString("utf8")), record);
      assert.equal(hash, definedHash(snapshot.policyVersionHash, record.inputs));
    }
  });

  test("a record with characters beyond ASCII is stored as UTF-8 that parses back to it, under the same inputsHash", () => {
    const { golden } = cases[0];
    const snapshot = prepareSnapshot(golden.snapshot);
    const { record } = recorded(snapshot, { ...golden.input, customer: { ...golden.input.customer, name: "Zoë 😀 日本" }, context: { ...golden.input.context, city: "Kraków" } });
    const { bytes, inputsHash: hash } = serializeRecord(snapshot.policyVersionHash, record);
    assert.ok(bytes.toString("utf8").includes("Zoë 😀 日本"));
    assert.deepEqual(JSON.parse(bytes.toString("utf8")), record);
    assert.equal(hash, definedHash(snapshot.policyVersionHash, record.inputs));
  });

  test("the inputs are written exactly as canonicalJson writes them, whatever order and shape their members have", () => {
    const golden = cases.find((c) => c.name.startsWith("09-"))!.golden;
    const { record } = recorded(prepareSnapshot(golden.snapshot), golden.input);
    const variants: TraceRecord["inputs"][] = [
      record.inputs,
      { ...record.inputs, bucketsOverCap: ["b2", "b1"], evidence: [[1, 2], null, [0, 7]], count: null, clv: { clvScore: 0.25 } },
      { ...record.inputs, customer: { z: 1, a: { y: [3, { d: 1, c: 2 }], b: null }, "10": "ten", "2": "two" }, context: { é: 1, e: 2, E: 3 } },
      { ...record.inputs, counters: { "k|2": 3, "k|10": 1 }, recentOutcomes: [{ offerId: "o1", outcome: "dismiss", at: "2026-01-01T00:00:00.000Z" }] },
      { ...record.inputs, count: Number.NaN, evidence: [[Number.POSITIVE_INFINITY, 1]], channel: "c\u2028\"q\"", customer: { dropped: undefined, kept: 1 } },
    ];
    for (const inputs of variants) assert.equal(recordedInputsJson(inputs), canonicalJson(inputs));
    const { bucketsOverCap: _absent, ...withoutBuckets } = variants[1];
    assert.equal(recordedInputsJson(withoutBuckets), canonicalJson(withoutBuckets), "an absent member is left out");
  });

  test("refusals are kept: they join the replay's rejections and the stored offers stand", () => {
    const golden = cases.find((c) => c.name.startsWith("09-"))!.golden;
    const snapshot = prepareSnapshot(golden.snapshot);
    const { decision, served } = recorded(snapshot, golden.input);
    const refused = decision.offers[1];
    const refusal = { offerId: refused.offerId, offerName: refused.offerName, stage: "contact_policy" as const, reason: "limit reached by a concurrent decision" };
    const kept = decision.offers.filter((o) => o !== refused);
    const record = stored(traceRecord(served, kept, [refusal]));
    const { trace } = renderTrace(row(record, snapshot.policyVersionHash), record, snapshot);
    const json = trace.rejectedOffers!.values.map((v) => (v.kind.case === "structValue" ? v.kind.value.fields.offerId?.kind.value : null));
    assert.ok(json.includes(refused.offerId));
    assert.deepEqual(
      trace.selectedOffers!.values.map((v) => (v.kind.case === "structValue" ? v.kind.value.fields.offerId?.kind.value : null)),
      kept.map((o) => o.offerId),
    );
  });
});

import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import {
  REJECTION_STAGES,
  completeDecision,
  decide,
  prepareDecision,
  prepareSnapshot,
  refill,
  unselected,
  scoreCandidates,
  type Decision,
  type DecisionInput,
  type SnapshotConfig,
} from "../../src/core/index.js";
import { createLogger } from "../../src/platform/logger.js";
import { createScoringPool, type ScoringPool } from "../../src/platform/scoring-pool.js";

/**
 * Golden cases (test/cases/*.json): a customer, a request and a snapshot configuration, with the
 * expected ranking and rejections. Each runs through the in-process core and through the service's
 * scoring pool (a real Piscina pool running workers/scoring-worker.ts, models and offers sent by
 * reference), and both must agree with the case and with each
 * other, byte for byte.
 */
interface GoldenCase {
  description: string;
  snapshot: SnapshotConfig;
  input: DecisionInput;
  expected: {
    offers: Array<Record<string, unknown>>;
    rejections: Array<{ offerId: string; stage: string; reason: string }>;
    degradedScoring: boolean;
    skippedRules?: Array<{ offerId: string; ruleId: string; attribute: string }>;
    reservations?: Record<string, string[]>;
    shadowScores?: Record<string, Record<string, number>>;
  };
}

const casesDir = join(import.meta.dirname, "../cases");
const cases = readdirSync(casesDir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((file) => ({ name: file.replace(/\.json$/, ""), golden: JSON.parse(readFileSync(join(casesDir, file), "utf8")) as GoldenCase }));

const round = (n: number) => Math.round(n * 1e6) / 1e6;

function assertMatches(decision: Decision, expected: GoldenCase["expected"]): void {
  assert.deepEqual(
    decision.offers.map((o) => ({
      rank: o.rank,
      offerId: o.offerId,
      creativeId: o.creativeId,
      channelId: o.channelId,
      placementId: o.placementId,
      mandatory: o.mandatory,
      score: round(o.score),
    })),
    expected.offers,
    "ranked offers",
  );
  assert.deepEqual(
    decision.rejectedOffers.map((r) => ({ offerId: r.offerId, stage: r.stage, reason: r.reason })),
    expected.rejections,
    "rejections",
  );
  assert.equal(decision.degradedScoring, expected.degradedScoring, "degradedScoring");
  if (expected.skippedRules) {
    assert.deepEqual(
      decision.qualificationResults.filter((q) => q.skipped).map((q) => ({ offerId: q.offerId, ruleId: q.ruleId, attribute: q.attribute })),
      expected.skippedRules,
    );
  }
  if (expected.reservations) {
    assert.deepEqual(Object.fromEntries(decision.offers.map((o) => [o.offerId, o.reservations.map((r) => r.key)])), expected.reservations);
  }
  if (expected.shadowScores) {
    assert.deepEqual(
      Object.fromEntries(
        decision.scoringResults.map((s) => [s.offerId, Object.fromEntries(Object.entries(s.shadowScores ?? {}).map(([k, v]) => [k, round(v)]))]),
      ),
      expected.shadowScores,
    );
  }
  const everyRejected = new Set(decision.rejectedOffers.map((r) => r.offerId));
  assert.equal(everyRejected.size, decision.rejectedOffers.length, "one rejection row per offer");
  for (const o of decision.offers) assert.ok(!everyRejected.has(o.offerId), `${o.offerId} is both ranked and rejected`);
}

test("there are golden cases, and together they reach every rejection stage", () => {
  assert.ok(cases.length >= 8, `${cases.length} cases`);
  const stages = new Set(cases.flatMap((c) => c.golden.expected.rejections.map((r) => r.stage)));
  assert.deepEqual(REJECTION_STAGES.filter((s) => !stages.has(s)), []);
});

describe("golden cases in process", () => {
  for (const { name, golden } of cases) {
    test(`${name}: ${golden.description}`, () => {
      const snapshot = prepareSnapshot(golden.snapshot);
      const decision = decide(snapshot, golden.input);
      assertMatches(decision, golden.expected);
      assert.deepEqual(decide(prepareSnapshot(structuredClone(golden.snapshot)), structuredClone(golden.input)), decision, "replays identically");
    });
  }
});

describe("golden cases through the Piscina worker pool", () => {
  let pool: ScoringPool;
  before(() => {
    // A deadline no golden case reaches on a busy machine: a fallback would score inline and prove nothing.
    pool = createScoringPool(createLogger("silent"), { threads: 2, timeoutMs: 60_000 });
  });
  after(async () => {
    await pool.close();
  });

  for (const { name, golden } of cases) {
    test(name, async () => {
      const snapshot = prepareSnapshot(golden.snapshot);
      const prepared = prepareDecision(snapshot, golden.input);
      const scores = await pool.score("golden", prepared.scoreTask);
      assert.equal(pool.fallbacks(), 0, "the task ran in a worker");
      const viaPool = completeDecision(prepared, scores);
      assertMatches(viaPool, golden.expected);
      assert.deepEqual(viaPool, decide(snapshot, golden.input), "pool and in-process decisions are identical");
    });
  }
});

describe("decision envelope", () => {
  const golden = cases.find((c) => c.name.startsWith("09-"))!.golden;
  const snapshot = prepareSnapshot(golden.snapshot);

  test("policyVersionHash changes with any configuration, not with its copy", () => {
    const changed = prepareSnapshot({ ...golden.snapshot, constraints: [] });
    assert.notEqual(changed.policyVersionHash, snapshot.policyVersionHash);
    assert.equal(prepareSnapshot(structuredClone(golden.snapshot)).policyVersionHash, snapshot.policyVersionHash);
  });

  test("trace fields: weights, best-first scoring results, fallbacks in rank order", () => {
    const decision = decide(snapshot, golden.input);
    assert.deepEqual(decision.rankingWeights, { score: 1, priority: 1, businessValue: 0, propensity: 0, clv: 0 });
    const scores = decision.scoringResults.map((s) => s.score);
    assert.deepEqual(scores, [...scores].sort((a, b) => b - a));
    assert.ok(decision.scoringResults.every((s) => s.explanations.length > 0 && s.offerName));
    assert.deepEqual(unselected(decision.ranked, decision.offers).map((f) => f.offerId), ["o-gold", "o-loan-b", "o-expired-mandatory"]);
    const unexplained = decide(snapshot, { ...golden.input, explain: false });
    assert.deepEqual(
      { scoring: unexplained.scoringResults, qualification: unexplained.qualificationResults, contact: unexplained.contactPolicyResults },
      { scoring: [], qualification: [], contact: [] },
      "an unexplained decision builds no explanation rows",
    );
    assert.deepEqual(unexplained.offers, decision.offers, "explaining does not change the decision");
    assert.equal(unexplained.rejectedCount, decision.rejectedOffers.length);
    assert.ok(unexplained.rejectedOffers.every((r) => r.stage !== "rank"));
  });

  test("refill after a refused reservation keeps the prefix and pulls in the next eligible offer", () => {
    const decision = decide(snapshot, golden.input);
    assert.deepEqual(decision.offers.map((o) => o.offerId), ["o-mandatory", "o-platinum", "o-loan-a", "o-savings"]);
    const again = refill(decision, new Set(["o-platinum"]));
    assert.deepEqual(again.map((o) => [o.rank, o.offerId]), [
      [1, "o-mandatory"],
      [2, "o-gold"],
      [3, "o-loan-a"],
      [4, "o-savings"],
    ]);
    assert.deepEqual(refill(decision, new Set(["o-loan-a"])).map((o) => o.offerId), ["o-mandatory", "o-platinum", "o-loan-b", "o-savings"]);
  });

  test("scores come back column by column in candidate order; a column short of a candidate is an error", () => {
    const prepared = prepareDecision(snapshot, golden.input);
    const scores = scoreCandidates(prepared.scoreTask);
    const n = prepared.candidates.offers.length;
    assert.ok(n > 2);
    assert.deepEqual([scores.score.length, scores.propensity.length, scores.propensitySource.length], [n, n, n]);
    const short = { ...scores, score: scores.score.slice(1), propensity: scores.propensity.slice(1), propensitySource: scores.propensitySource.slice(1) };
    assert.throws(() => completeDecision(prepared, short), new RegExp(`${n - 1} scores for ${n} candidates`));
  });

  test("an experiment's model override replaces the score node's model", () => {
    const decision = decide(snapshot, { ...golden.input, modelKey: "missing-challenger" });
    assert.equal(decision.modelKey, "missing-challenger");
    assert.equal(decision.degradedScoring, true);
  });

  test("an unknown flow id is the caller's error", () => {
    assert.throws(() => decide(snapshot, { ...golden.input, flowId: "nope" }), /flow nope is not in the snapshot/);
  });
});

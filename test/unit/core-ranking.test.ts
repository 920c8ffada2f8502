import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  createRandom,
  rankOrder,
  rankScore,
  resolveRankingWeights,
  selectOffers,
  unselected,
  type CandidateScore,
  type CreativeChoice,
  type CrossOfferConstraint,
  type Offer,
  type RankedCandidate,
  type RankInput,
  type Reservation,
  type SelectionPlan,
} from "../../src/core/index.js";

const NOW = Date.parse("2024-06-01T12:00:00Z");

function offer(id: string, patch: Partial<Offer> = {}): Offer {
  return { id, name: id, status: "active", priority: 50, businessValue: 50, createdAt: "2024-01-01T00:00:00Z", ...patch };
}

function scored(offerId: string, score: number, propensity = score): CandidateScore {
  return { offerId, score, propensity, propensitySource: "model", modelId: "m", modelKey: "m", modelType: "formula", explanations: [] };
}

const anywhere: CreativeChoice = { creativeId: null, channelId: null, placementId: null };

/** rankOrder's columns from a row per candidate, as the tests write them. */
function columns(rows: ReadonlyArray<{ offer: Offer; score: CandidateScore; options: CreativeChoice[]; reservations: Reservation[] }>): RankInput {
  return {
    offers: rows.map((r) => r.offer),
    scores: {
      modelId: "m",
      modelKey: "m",
      modelType: "formula",
      score: rows.map((r) => r.score.score),
      propensity: rows.map((r) => r.score.propensity),
      propensitySource: rows.map((r) => r.score.propensitySource),
      extras: {},
    },
    options: rows.map((r) => r.options),
    reservations: rows.map((r) => r.reservations),
  };
}

function candidate(offerId: string, position: number, options: Array<CreativeChoice | null> = [anywhere], categoryId: string | null = null): RankedCandidate {
  return {
    position, offerId, offerName: offerId, categoryId, mandatory: false, score: 1 - position / 100, rankScore: 1 - position / 100,
    propensity: 0.5, propensitySource: "model", options, reservations: [],
  };
}

describe("rank score and order", () => {
  test("default weights rank by model score alone", () => {
    const weights = resolveRankingWeights([]);
    assert.deepEqual(weights, { score: 1, priority: 0, businessValue: 0, propensity: 0, clv: 0 });
    assert.equal(rankScore(weights, offer("a", { priority: 100 }), 0.3, 0.3, null), 0.3);
  });

  test("a profile mixes terms as a weighted mean and tilts by CLV", () => {
    const weights = resolveRankingWeights([
      { id: "p1", weights: { score: 1, priority: 1 } },
      { id: "p2", weights: { score: 1, businessValue: 1, clv: 1 }, isDefault: true },
    ]);
    assert.deepEqual(weights, { score: 1, priority: 0, businessValue: 1, propensity: 0, clv: 1 });
    const o = offer("a", { businessValue: 80, margin: 1, revenueValue: 100 });
    const base = (0.4 + 0.8) / 2;
    assert.ok(Math.abs(rankScore(weights, o, 0.4, 0.4, { clvScore: 50 }) - base * 1.5 ** 0.5) < 1e-12);
    assert.equal(rankScore(weights, o, 0.4, 0.4, null), base, "no CLV record, no tilt");
    assert.equal(resolveRankingWeights([{ id: "p1", weights: { priority: 2 } }], "p1").priority, 2, "a named profile wins");
  });

  test("live mandatory offers first; expired or emergency-excluded ones are ordinary; ties by priority then id", () => {
    const inputs = [
      { offer: offer("plain-high"), score: scored("plain-high", 0.9) },
      { offer: offer("expired", { mandatory: true, mandatoryExpiresAt: "2024-05-01T00:00:00Z" }), score: scored("expired", 0.8) },
      { offer: offer("mandatory", { mandatory: true, mandatoryExpiresAt: "2024-07-01T00:00:00Z" }), score: scored("mandatory", 0.1) },
      {
        offer: offer("emergency", { mandatory: true, mandatoryExpiresAt: "2024-07-01T00:00:00Z", emergencyExcluded: true }),
        score: scored("emergency", 0.85),
      },
      { offer: offer("tie-b", { priority: 60 }), score: scored("tie-b", 0.5) },
      { offer: offer("tie-a", { priority: 60 }), score: scored("tie-a", 0.5) },
      { offer: offer("tie-low", { priority: 10 }), score: scored("tie-low", 0.5) },
    ].map((i) => ({ ...i, options: [anywhere], reservations: [] }));
    const order = unselected(rankOrder(columns(inputs), resolveRankingWeights([]), null, NOW), []);
    assert.deepEqual(order.map((c) => [c.offerId, c.position, c.mandatory]), [
      ["mandatory", 0, true],
      ["plain-high", 1, false],
      ["emergency", 2, false],
      ["expired", 3, false],
      ["tie-a", 4, false],
      ["tie-b", 5, false],
      ["tie-low", 6, false],
    ]);
  });

  test("the lazy order, read in any pattern, is the full sort: mandatory, rank score, priority (descending), offer id", () => {
    const random = createRandom("rank-order-property");
    for (let round = 0; round < 200; round++) {
      // By model score alone, or mixed with priority: either way priority and id break ties.
      const weights = resolveRankingWeights(round % 2 ? [] : [{ id: "mix", weights: { score: 1, businessValue: 1 }, isDefault: true }]);
      // Few distinct scores and priorities, so that ties are common and the last keys decide.
      const inputs = Array.from({ length: 1 + Math.floor(random() * 40) }, (_, i) => {
        const id = `o${Math.floor(random() * 1000)}-${i}`;
        const live = random() < 0.15;
        return {
          offer: offer(id, { priority: 10 * Math.floor(random() * 3), ...(live && { mandatory: true, mandatoryExpiresAt: "2024-07-01T00:00:00Z" }) }),
          score: scored(id, Math.floor(random() * 4) / 4),
          options: [anywhere],
          reservations: [],
        };
      });
      const expected = inputs
        .map(({ offer: o, score }) => ({ id: o.id, mandatory: o.mandatory === true, rank: rankScore(weights, o, score.score, score.propensity, null), priority: o.priority }))
        .sort((a, b) => Number(b.mandatory) - Number(a.mandatory) || b.rank - a.rank || b.priority - a.priority || (a.id < b.id ? -1 : 1))
        .map((c) => c.id);
      const order = rankOrder(columns(inputs), weights, null, NOW);
      // Read a prefix first, as a selection does, then the rest.
      const prefix = Math.floor(random() * inputs.length);
      for (let i = 0; i < prefix; i++) assert.equal(order.at(i)?.offerId, expected[i], `round ${round}, position ${i}`);
      const all = unselected(order, []);
      assert.deepEqual(all.map((c) => c.offerId), expected, `round ${round}`);
      assert.deepEqual(all.map((c) => c.position), expected.map((_, i) => i));
      assert.equal(order.at(inputs.length), undefined);
    }
  });
});

describe("filling slots", () => {
  const slotA: CreativeChoice = { creativeId: "cr-a", channelId: "web", placementId: "A" };
  const slotB: CreativeChoice = { creativeId: "cr-b", channelId: "web", placementId: "B" };

  test("each placement takes its own best offers, an offer at most once", () => {
    const pool = [
      candidate("o1", 0, [slotA, slotB]),
      candidate("o2", 1, [null, slotB]),
      candidate("o3", 2, [slotA, slotB]),
      candidate("o4", 3, [slotA, null]),
    ];
    const plan: SelectionPlan = { slots: [{ placementId: "A", channelId: "web" }, { placementId: "B", channelId: "web" }], count: 1, constraints: [] };
    const out = selectOffers(pool, plan);
    assert.deepEqual(out.offers.map((o) => [o.rank, o.offerId, o.placementId, o.creativeId]), [
      [1, "o1", "A", "cr-a"],
      [2, "o2", "B", "cr-b"],
    ]);
    assert.deepEqual(unselected(pool, out.offers).map((f) => f.offerId), ["o3", "o4"]);
    assert.deepEqual(out.rejections.map((r) => [r.offerId, r.stage, r.reason]), [
      ["o3", "rank", "below the top 1"],
      ["o4", "rank", "below the top 1"],
    ]);
  });

  test("cross-offer constraints cut the lower-ranked offer with the constraint as reason", () => {
    const constraints: CrossOfferConstraint[] = [
      { type: "mutual_exclusion", offerIds: ["o1", "o2"] },
      { type: "max_per_category", categoryId: "cards", max: 1 },
    ];
    const pool = [candidate("o1", 0), candidate("o2", 1), candidate("c1", 2, [anywhere], "cards"), candidate("c2", 3, [anywhere], "cards"), candidate("o5", 4)];
    const out = selectOffers(pool, { slots: [{ placementId: null, channelId: null }], count: 3, constraints });
    assert.deepEqual(out.offers.map((o) => o.offerId), ["o1", "c1", "o5"]);
    assert.deepEqual(out.rejections.map((r) => [r.offerId, r.reason]), [
      ["o2", "mutually exclusive with o1"],
      ["c2", "category cards already has 1 offer(s)"],
    ]);
  });

  test("refilling without a refused offer never moves the offers ranked before it", () => {
    const random = createRandom("refill-property");
    for (let round = 0; round < 300; round++) {
      const slots = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, i) => ({ placementId: `p${i}`, channelId: null }));
      const pool = Array.from({ length: 3 + Math.floor(random() * 8) }, (_, i) =>
        candidate(
          `o${i}`,
          i,
          slots.map((s) => (random() < 0.7 ? { creativeId: `cr-${i}-${s.placementId}`, channelId: null, placementId: s.placementId } : null)),
          random() < 0.5 ? "cat" : null,
        ),
      );
      const constraints: CrossOfferConstraint[] = [
        { type: "mutual_exclusion", offerIds: ["o1", "o3", "o5"] },
        { type: "max_per_category", categoryId: "cat", max: 1 + Math.floor(random() * 2) },
      ];
      const plan: SelectionPlan = { slots, count: 1 + Math.floor(random() * 2), constraints };
      const first = selectOffers(pool, plan);
      if (first.offers.length === 0) continue;
      const refusedIndex = Math.floor(random() * first.offers.length);
      const again = selectOffers(pool, plan, new Set([first.offers[refusedIndex].offerId]));
      assert.deepEqual(again.offers.slice(0, refusedIndex), first.offers.slice(0, refusedIndex), `round ${round}`);
      assert.ok(!again.offers.some((o) => o.offerId === first.offers[refusedIndex].offerId));
    }
  });
});

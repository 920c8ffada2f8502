import { test } from "node:test";
import assert from "node:assert/strict";
import { computeClv, MS_PER_DAY, withEventActivity } from "../../src/core/index.js";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const daysAgo = (d: number) => NOW - d * MS_PER_DAY;

/** Each case worked by hand from the formulas in docs/clv.md. */
test("CLV on hand-computed cases", () => {
  const cases = [
    {
      name: "seen today, nothing else: retention term only",
      facts: { firstAt: NOW, lastAt: NOW, impressions: 0, conversionValue: 0 },
      // p = 0; score = 100·0.2 = 20; revenue 0
      want: { clvScore: 20, predictedRevenue: 0, churnProbability: 0, rfmRecency: 0, rfmFrequency: 0, rfmMonetary: 0, segment: "low" },
    },
    {
      name: "90 days quiet after two months: half churned",
      facts: { firstAt: daysAgo(150), lastAt: daysAgo(90), impressions: 20, conversionValue: 500 },
      // p = 90/180 = 0.5; T = 60/30 = 2; revenue = 500/2·24·0.5 = 3000; score = 100·(0.2·0.5 + 0.3·0.5 + 0.5·0.5) = 50
      want: { clvScore: 50, predictedRevenue: 3000, churnProbability: 0.5, rfmRecency: 90, rfmFrequency: 20, rfmMonetary: 500, segment: "medium" },
    },
    {
      name: "recent, frequent and valuable",
      facts: { firstAt: daysAgo(10), lastAt: daysAgo(10), impressions: 60, conversionValue: 1500 },
      // p = 10/100 = 0.1; T = 1; revenue = 1500·24·0.9 = 32400; score = 100·(0.18 + 0.3·0.75 + 0.5·0.75) = 78
      want: { clvScore: 78, predictedRevenue: 32400, churnProbability: 0.1, rfmRecency: 10, rfmFrequency: 60, rfmMonetary: 1500, segment: "high" },
    },
    {
      name: "engaged but 135 days quiet: at risk",
      facts: { firstAt: daysAgo(135), lastAt: daysAgo(135), impressions: 5, conversionValue: 0 },
      // p = 135/225 = 0.6; score = 100·(0.2·0.4 + 0.3·5/25) = 14
      want: { clvScore: 14, predictedRevenue: 0, churnProbability: 0.6, rfmRecency: 135, rfmFrequency: 5, rfmMonetary: 0, segment: "at_risk" },
    },
    {
      name: "long quiet but never engaged: low, not at risk",
      facts: { firstAt: daysAgo(200), lastAt: daysAgo(200), impressions: 0, conversionValue: 0 },
      // p = 200/290 = 0.68966; score = 100·0.2·(90/290) = 6.2 → 6
      want: { clvScore: 6, predictedRevenue: 0, churnProbability: 0.6897, rfmRecency: 200, rfmFrequency: 0, rfmMonetary: 0, segment: "low" },
    },
    {
      name: "partial days floor; revenue rounds to cents",
      facts: { firstAt: daysAgo(400.5), lastAt: daysAgo(30.9), impressions: 7, conversionValue: 99.99 },
      // R = 30; p = 30/120 = 0.25; T = 369.6/30 = 12.32; revenue = 99.99/12.32·24·0.75 = 146.089… → 146.09
      // score = 100·(0.2·0.75 + 0.3·7/27 + 0.5·99.99/599.99) = 100·(0.15 + 0.077778 + 0.083326) = 31.11 → 31
      want: { clvScore: 31, predictedRevenue: 146.09, churnProbability: 0.25, rfmRecency: 30, rfmFrequency: 7, rfmMonetary: 99.99, segment: "medium" },
    },
  ];
  for (const c of cases) assert.deepEqual(computeClv(c.facts, NOW), c.want, c.name);
});

test("events widen the first and last seen, never impressions or value; alone they make facts", () => {
  const facts = { firstAt: 1_000, lastAt: 5_000, impressions: 3, conversionValue: 40 };
  assert.deepEqual(withEventActivity(facts, { firstAt: 500, lastAt: 9_000 }), { firstAt: 500, lastAt: 9_000, impressions: 3, conversionValue: 40 });
  assert.deepEqual(withEventActivity(facts, { firstAt: 2_000, lastAt: 3_000 }), facts);
  assert.deepEqual(withEventActivity(undefined, { firstAt: 2_000, lastAt: 3_000 }), { firstAt: 2_000, lastAt: 3_000, impressions: 0, conversionValue: 0 });
  assert.equal(withEventActivity(undefined, undefined), undefined);
});

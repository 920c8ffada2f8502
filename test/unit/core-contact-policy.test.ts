import { describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  admits,
  applyContactPolicies,
  budgetCounterKey,
  counterPlan,
  decide,
  frequencyCounterKey,
  periodWindow,
  prepareSnapshot,
  rampVerdict,
  windowTtlSeconds,
  type ContactPolicyInput,
  type CounterCheck,
  type Offer,
  type SnapshotConfig,
} from "../../src/core/index.js";

const NOW_ISO = "2024-06-01T12:30:00Z"; // a Saturday
const NOW = Date.parse(NOW_ISO);

function offer(id: string, patch: Partial<Offer> = {}): Offer {
  return { id, name: id.toUpperCase(), status: "active", priority: 50, businessValue: 50, createdAt: "2024-01-01T00:00:00Z", ...patch };
}

function input(patch: Partial<ContactPolicyInput> = {}): ContactPolicyInput {
  return {
    customerId: "c1",
    bag: { customer: {}, context: {} },
    channel: null,
    nowMs: NOW,
    counters: {},
    recentOutcomes: [],
    explain: true,
    ...patch,
  };
}

describe("counter keys", () => {
  test("frequency keys carry customer, scope, window and window index; ids are URI-encoded", () => {
    const index = Math.floor(NOW / 1000 / 3600);
    assert.equal(frequencyCounterKey("c:1{x}", "offer", "o1", 3600, NOW), `fc:c%3A1%7Bx%7D:offer:o1:3600s:${index}`);
    assert.equal(windowTtlSeconds(3600, NOW), 1800, "half an hour left in the hour");
    assert.equal(windowTtlSeconds(86400, NOW), 41400);
  });

  const periods: Array<["day" | "week" | "month", string, number]> = [
    ["day", "day:2024-06-01", 11.5 * 3600],
    ["week", "week:2024-05-27", 35.5 * 3600],
    ["month", "month:2024-06", 29 * 86400 + 11.5 * 3600],
  ];
  for (const [period, label, ttl] of periods) {
    test(`budget period ${period} is the UTC calendar ${period}`, () => {
      assert.deepEqual(periodWindow(period, NOW), { label, ttlSeconds: ttl });
      assert.equal(budgetCounterKey("b1", "spend", period, NOW), `bg:b1:spend:${label}`);
    });
  }

  test("lifetime budgets have one key forever", () => {
    assert.equal(budgetCounterKey("b1", "impressions", "lifetime", NOW), "bg:b1:impressions");
  });

  test("a consuming check admits up to the limit; a read-only check admits below it", () => {
    const consume: CounterCheck = { key: "k", limit: 3, increment: 1, policyId: "p", kind: "frequency_cap" };
    assert.equal(admits(consume, { k: 2 }), true);
    assert.equal(admits(consume, { k: 3 }), false);
    assert.equal(admits(consume, {}), true, "absent counters are 0");
    const readOnly: CounterCheck = { ...consume, increment: 0, kind: "budget_conversions" };
    assert.equal(admits(readOnly, { k: 2 }), true);
    assert.equal(admits(readOnly, { k: 3 }), false);
  });

  test("counterPlan lists what the decision will check, for active candidates only", () => {
    const config: SnapshotConfig = {
      offers: [
        offer("o1", { categoryId: "cat" }),
        offer("o2", { budget: { maxImpressions: 10, period: "day" } }),
        offer("o3", { status: "paused" }),
      ],
      channels: [{ id: "ch-email", type: "email" }],
      contactPolicies: [
        { id: "per-offer", scope: "offer", maxImpressions: 2, windowSeconds: 86400 },
        { id: "per-category", scope: "category", maxImpressions: 5, windowSeconds: 604800 },
        { id: "per-channel", scope: "channel", maxImpressions: 3, windowSeconds: 86400 },
        { id: "sup", type: "suppression", afterOutcomes: ["dismiss"], windowSeconds: 3600 },
      ],
      budgets: [{ id: "global", scope: "global", maxSpend: 100, costPerImpression: 0.25 }],
    };
    const snapshot = prepareSnapshot(config);
    const day = Math.floor(NOW / 1000 / 86400);
    const week = Math.floor(NOW / 1000 / 604800);
    const plan = counterPlan(snapshot, { customerId: "c1", now: NOW_ISO });
    assert.deepEqual(plan.keys, [
      `fc:c1:offer:o1:86400s:${day}`,
      `fc:c1:category:cat:604800s:${week}`,
      "bg:global:spend",
      `fc:c1:offer:o2:86400s:${day}`,
      "bg:offer%3Ao2:impressions:day:2024-06-01",
    ]);
    assert.ok(
      counterPlan(snapshot, { customerId: "c1", channel: "ch-email", now: NOW_ISO }).keys.includes(`fc:c1:channel:ch-email:86400s:${day}`),
      "channel caps apply once the channel is known",
    );
    assert.deepEqual([...plan.checks.keys()].map((o) => o.id), ["o1", "o2"], "checks of the active candidates, by offer");
    const input = { customerId: "c1", now: NOW_ISO, customer: {}, context: {}, clv: null, seed: "s", counters: { [`fc:c1:offer:o1:86400s:${day}`]: 2 } };
    assert.deepEqual(decide(snapshot, { ...input, counterChecks: plan.checks }), decide(snapshot, input), "the plan's checks decide as the core's own");
  });

  test("counterPlan is empty without caps and budgets, suppression policies or not, and an offer's own budget counts", () => {
    const suppression = { id: "sup", type: "suppression" as const, afterOutcomes: ["dismiss"], windowSeconds: 3600 };
    for (const config of [{ offers: [offer("o1"), offer("o2")] }, { offers: [offer("o1")], contactPolicies: [suppression] }]) {
      const plan = counterPlan(prepareSnapshot(config), { customerId: "c1", now: NOW_ISO });
      assert.deepEqual(plan.keys, []);
      assert.equal(plan.checks.size, 0);
    }
    const budgeted = prepareSnapshot({ offers: [offer("o1"), offer("o2", { budget: { maxImpressions: 10, period: "day" } })], contactPolicies: [suppression] });
    assert.deepEqual(counterPlan(budgeted, { customerId: "c1", now: NOW_ISO }).keys, ["bg:offer%3Ao2:impressions:day:2024-06-01"]);
  });
});

describe("contact policy stage", () => {
  const snapshot = prepareSnapshot({
    offers: [],
    contactPolicies: [
      { id: "strict", scope: "offer", maxImpressions: 1, windowSeconds: 86400 },
      { id: "loose", scope: "offer", maxImpressions: 5, windowSeconds: 86400 },
    ],
    budgets: [
      { id: "money", scope: "global", maxSpend: 10, costPerImpression: 0.5, maxConversions: 3 },
      { id: "paused", scope: "global", maxImpressions: 0, status: "paused" },
    ],
  });

  test("reservations: one per key with the stricter limit, spend in micro-units, no read-only checks", () => {
    const { allowed, reservations } = applyContactPolicies([offer("o1")], snapshot, input());
    const key = frequencyCounterKey("c1", "offer", "o1", 86400, NOW);
    assert.deepEqual(allowed.map((o) => o.id), ["o1"]);
    assert.deepEqual(reservations[0], [
      { key, limit: 1, increment: 1, ttlSeconds: windowTtlSeconds(86400, NOW), policyId: "strict", kind: "frequency_cap" },
      { key: "bg:money:spend", limit: 10_000_000, increment: 500_000, policyId: "money", kind: "budget_spend" },
    ]);
  });

  test("the reservations column stays beside the offers allowed when offers between them are blocked", () => {
    const offers = [offer("o1"), offer("o2", { emergencyExcluded: true }), offer("o3"), offer("o4", { emergencyExcluded: true })];
    const out = applyContactPolicies(offers, snapshot, input());
    assert.deepEqual(out.allowed.map((o) => o.id), ["o1", "o3"]);
    assert.deepEqual(out.reservations.map((r) => r[0].key), [frequencyCounterKey("c1", "offer", "o1", 86400, NOW), frequencyCounterKey("c1", "offer", "o3", 86400, NOW)]);
    assert.deepEqual(out.rejections.map((r) => r.offerId), ["o2", "o4"]);
    const none = applyContactPolicies(offers.slice(0, 1), prepareSnapshot({ offers: [] }), input());
    assert.equal(none.allowed.length, 1);
    assert.deepEqual(none.reservations, [[]], "an offer nothing holds back reserves nothing");
  });

  test("spend that the next impression would overshoot blocks at stage contact_policy", () => {
    const out = applyContactPolicies([offer("o1")], snapshot, input({ counters: { "bg:money:spend": 9_600_000 } }));
    assert.deepEqual(out.rejections, [
      {
        offerId: "o1",
        offerName: "O1",
        stage: "contact_policy",
        reason: "budget money spend exhausted: 9600000/10000000",
        detail: { policyId: "money", key: "bg:money:spend", current: 9_600_000, limit: 10_000_000 },
      },
    ]);
  });

  test("conversions counted by Respond block once the maximum is reached", () => {
    const out = applyContactPolicies([offer("o1")], snapshot, input({ counters: { "bg:money:conversions": 3 } }));
    assert.equal(out.rejections[0].reason, "budget money conversions exhausted: 3/3");
  });

  test("consent refusals match a channel by id, type or name; absent entries do not block", () => {
    const empty = prepareSnapshot({ offers: [] });
    const channel = { id: "ch-1", type: "email", name: "Newsletter" };
    for (const consent of [{ "ch-1": false }, { email: false }, { Newsletter: false }]) {
      const out = applyContactPolicies([offer("o1")], empty, input({ channel, bag: { customer: { consent }, context: {} } }));
      assert.equal(out.rejections[0]?.stage, "consent", JSON.stringify(consent));
    }
    for (const consent of [{ email: true }, { sms: false }, "no"]) {
      const out = applyContactPolicies([offer("o1")], empty, input({ channel, bag: { customer: { consent }, context: {} } }));
      assert.equal(out.rejections.length, 0, JSON.stringify(consent));
    }
  });

  test("guardrails: onMissing skip lets the offer through, block excludes it", () => {
    const condition = { attribute: "age", op: "lt" as const, value: 18 };
    for (const [onMissing, excluded] of [["skip", false], ["block", true]] as const) {
      const guarded = prepareSnapshot({ offers: [], guardrails: [{ id: "minors", condition, action: "exclude", onMissing }] });
      const out = applyContactPolicies([offer("o1")], guarded, input());
      assert.equal(out.rejections.length === 1, excluded, onMissing);
      assert.match(out.results[0].reason, onMissing === "skip" ? /skipped: attribute age is missing/ : /excluded: attribute age is missing/);
    }
  });

  test("suppression counts only matching outcomes inside the window", () => {
    const suppressing = prepareSnapshot({
      offers: [],
      contactPolicies: [{ id: "rest", type: "suppression", afterOutcomes: ["dismiss"], windowSeconds: 3600 }],
    });
    const cases: Array<[string, string, string, boolean]> = [
      ["dismiss 30 minutes ago", "dismiss", "2024-06-01T12:00:00Z", true],
      ["dismiss exactly at the window start", "dismiss", "2024-06-01T11:30:00Z", true],
      ["dismiss before the window", "dismiss", "2024-06-01T11:29:59Z", false],
      ["a click", "click", "2024-06-01T12:00:00Z", false],
      ["a future timestamp", "dismiss", "2024-06-01T13:00:00Z", false],
    ];
    for (const [name, outcome, at, blocked] of cases) {
      const out = applyContactPolicies([offer("o1")], suppressing, input({ recentOutcomes: [{ offerId: "o1", outcome, at }] }));
      assert.equal(out.rejections.some((r) => r.stage === "suppression"), blocked, name);
    }
  });

  test("a suppression scoped to other offers neither blocks nor writes a row", () => {
    const scoped = prepareSnapshot({
      offers: [],
      contactPolicies: [{ id: "rest", type: "suppression", afterOutcomes: ["dismiss"], windowSeconds: 3600, appliesTo: { offerIds: ["o2"] } }],
    });
    const out = applyContactPolicies([offer("o1")], scoped, input({ recentOutcomes: [{ offerId: "o1", outcome: "dismiss", at: "2024-06-01T12:00:00Z" }] }));
    assert.deepEqual(out.rejections, []);
    assert.deepEqual(out.results, []);
  });
});

describe("maturity ramp", () => {
  const ramp = { rampDays: 10, startFraction: 0.2 };
  const launched = offer("new", { createdAt: "2024-06-01T00:00:00Z" });
  const at = (days: number) => Date.parse("2024-06-01T00:00:00Z") + days * 86_400_000;

  test("the share grows linearly from startFraction to everyone", () => {
    assert.equal(rampVerdict(ramp, launched, "c", at(0)).fraction, 0.2);
    assert.ok(Math.abs(rampVerdict(ramp, launched, "c", at(5)).fraction - 0.6) < 1e-12);
    assert.equal(rampVerdict(ramp, launched, "c", at(10)).fraction, 1);
    assert.equal(rampVerdict(ramp, launched, "c", at(30)).admitted, true);
  });

  test("about the ramp's share of customers is admitted, and nobody is ever un-admitted", () => {
    const customers = Array.from({ length: 5000 }, (_, i) => `customer-${i}`);
    const admittedOn = (day: number) => new Set(customers.filter((c) => rampVerdict(ramp, launched, c, at(day)).admitted));
    const day1 = admittedOn(1);
    const day5 = admittedOn(5);
    assert.ok(Math.abs(day1.size / customers.length - 0.28) < 0.03, `day 1 share ${day1.size / customers.length}`);
    assert.ok(Math.abs(day5.size / customers.length - 0.6) < 0.03, `day 5 share ${day5.size / customers.length}`);
    for (const c of day1) assert.ok(day5.has(c), `${c} lost access`);
  });
});

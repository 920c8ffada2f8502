import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { budgetCounterKey, counterPlan, decide, frequencyCounterKey, prepareSnapshot, type Offer } from "../../src/core/index.js";

const NOW = "2024-06-01T12:30:00Z";

const offer = (id: string): Offer => ({ id, name: id.toUpperCase(), status: "active", priority: 50, businessValue: 50, createdAt: "2024-01-01T00:00:00Z" });

// o1 goes out on web or email, o2 only on web, o3 has no creative; placement "hero" is on web.
const snapshot = prepareSnapshot({
  offers: [offer("o1"), offer("o2"), offer("o3")],
  channels: [
    { id: "ch-web", name: "Website", type: "web" },
    { id: "ch-email", name: "Newsletter", type: "email" },
  ],
  placements: [{ id: "hero", channelId: "ch-web" }],
  creatives: [
    { id: "cr-1-web", offerId: "o1", channelId: "ch-web" },
    { id: "cr-2-email", offerId: "o1", channelId: "ch-email" },
    { id: "cr-3-web", offerId: "o2", channelId: "ch-web" },
    { id: "cr-4-hero", offerId: "o2", placementId: "hero" },
  ],
});

const run = (consent: unknown, patch: { channel?: string; placements?: string[] } = {}) =>
  decide(snapshot, { customerId: "c1", now: NOW, customer: consent === undefined ? {} : { consent }, context: {}, clv: null, seed: "s", count: 10, explain: true, ...patch });

describe("channel coupling honours consent refusals without a decision channel", () => {
  test("no refusal: the smallest creative id of any channel", () => {
    const d = run(undefined);
    assert.deepEqual(d.offers.map((o) => [o.offerId, o.creativeId]).sort(), [["o1", "cr-1-web"], ["o2", "cr-3-web"], ["o3", null]]);
  });

  test("web refused (by type, id or name): o1 goes out by email, o2 is rejected at stage consent, o3 has no channel", () => {
    for (const consent of [{ web: false }, { "ch-web": false }, { Website: false }]) {
      const d = run(consent);
      assert.deepEqual(d.offers.map((o) => [o.offerId, o.creativeId, o.channelId]).sort(), [["o1", "cr-2-email", "ch-email"], ["o3", null, null]], JSON.stringify(consent));
      const rejected = d.rejectedOffers.find((r) => r.offerId === "o2");
      assert.equal(rejected?.stage, "consent");
      assert.deepEqual(rejected?.detail, { channelId: "ch-web", consentKey: Object.keys(consent)[0] });
    }
  });

  test("a creative without a channel goes out on its placement's channel, and is refused with it", () => {
    const d = run({ web: false }, { placements: ["hero"] });
    assert.deepEqual(d.offers.map((o) => o.offerId), []);
    assert.equal(d.rejectedOffers.find((r) => r.offerId === "o2")?.stage, "consent");
    assert.equal(run({ email: false }, { placements: ["hero"] }).offers[0]?.creativeId, "cr-4-hero");
  });

  test("with a decision channel the contact policy's consent check still decides first", () => {
    const d = run({ email: false }, { channel: "ch-email" });
    assert.deepEqual(d.offers, []);
    assert.ok(d.rejectedOffers.filter((r) => r.offerId === "o1").every((r) => r.stage === "consent"));
  });
});

describe("channel caps and budgets hold without a decision channel", () => {
  // o1 goes out on web or email, o2 only on web, o3 has no creative, o4 only through the hero
  // placement (on web) with a creative that names no channel.
  const limited = prepareSnapshot({
    ...snapshot.config,
    offers: [...snapshot.config.offers, offer("o4")],
    creatives: [...snapshot.config.creatives!, { id: "cr-5-hero", offerId: "o4", placementId: "hero" }],
    contactPolicies: [{ id: "cap-web", scope: "channel", scopeId: "ch-web", maxImpressions: 1, windowSeconds: 86400 }],
    budgets: [{ id: "bg-email", scope: "channel", scopeId: "ch-email", maxImpressions: 1 }],
  });
  const webCap = frequencyCounterKey("c1", "channel", "ch-web", 86400, Date.parse(NOW));
  const emailBudget = budgetCounterKey("bg-email", "impressions", "lifetime", Date.parse(NOW));
  const decideWith = (counters: Record<string, number>, patch: { channel?: string; customer?: Record<string, unknown> } = {}) =>
    decide(limited, { customerId: "c1", now: NOW, customer: {}, context: {}, clv: null, seed: "s", count: 10, explain: true, counters, ...patch });
  const served = (d: ReturnType<typeof decideWith>) =>
    Object.fromEntries(d.offers.map((o) => [o.offerId, [o.creativeId, o.channelId, o.reservations.map((r) => r.key)]]));

  test("the service reads the counters of every channel a creative could go out on, and no more without channel limits", () => {
    assert.deepEqual(counterPlan(limited, { customerId: "c1", now: NOW }).keys.sort(), [emailBudget, webCap].sort());
    // With a channel, contact policy checks that channel's limits and nothing else is read.
    assert.deepEqual(counterPlan(limited, { customerId: "c1", now: NOW, channel: "ch-web" }).keys, [webCap]);
    assert.equal(snapshot.channelLimits, null);
    const offerCapped = prepareSnapshot({ ...snapshot.config, contactPolicies: [{ id: "cap-offer", scope: "offer", maxImpressions: 1, windowSeconds: 60 }] });
    assert.equal(offerCapped.channelLimits, null);
    assert.equal(counterPlan(offerCapped, { customerId: "c1", now: NOW }).keys.length, 3, "one offer cap key per active offer, nothing per channel");
  });

  test("open channels: each chosen creative takes its channel's counters with the offer", () => {
    const d = decideWith({});
    assert.deepEqual(served(d), {
      o1: ["cr-1-web", "ch-web", [webCap]],
      o2: ["cr-3-web", "ch-web", [webCap]],
      o3: [null, null, []],
      o4: ["cr-5-hero", "ch-web", [webCap]],
    });
  });

  test("web cap exhausted: o1 goes out by e-mail against the e-mail budget, o2 and o4 are rejected at frequency_cap", () => {
    const d = decideWith({ [webCap]: 1 });
    assert.deepEqual(served(d), { o1: ["cr-2-email", "ch-email", [emailBudget]], o3: [null, null, []] });
    for (const offerId of ["o2", "o4"]) {
      const rejected = d.rejectedOffers.find((r) => r.offerId === offerId);
      assert.equal(rejected?.stage, "frequency_cap", offerId);
      assert.deepEqual(rejected?.detail, { policyId: "cap-web", channelId: "ch-web", key: webCap, current: 1, limit: 1 });
      assert.deepEqual(
        d.contactPolicyResults.filter((row) => row.offerId === offerId && row.blocked),
        [{ offerId, blocked: true, policyId: "cap-web", reason: "frequency cap cap-web exhausted on channel ch-web: 1/1" }],
      );
    }
  });

  test("e-mail budget exhausted: o1 stays on the web; every channel closed: o1 is rejected at the cap, which contact policy checks before budgets", () => {
    assert.deepEqual(served(decideWith({ [emailBudget]: 1 })).o1, ["cr-1-web", "ch-web", [webCap]]);
    const d = decideWith({ [webCap]: 1, [emailBudget]: 1 });
    assert.deepEqual(Object.keys(served(d)), ["o3"]);
    assert.equal(d.rejectedOffers.find((r) => r.offerId === "o1")?.stage, "frequency_cap");
    const onlyEmail = decideWith({ [emailBudget]: 1 }, { customer: { consent: { web: false } } });
    const o1 = onlyEmail.rejectedOffers.find((r) => r.offerId === "o1");
    assert.equal(o1?.stage, "consent", "a refusal is named before a budget when both closed the offer's channels");
    assert.deepEqual(o1?.detail, { channelId: "ch-web", consentKey: "web" });
  });

  test("a budget's rejection names the budget and the channel at stage contact_policy", () => {
    const emailOnly = prepareSnapshot({ ...limited.config, creatives: [{ id: "cr-2-email", offerId: "o1", channelId: "ch-email" }] });
    const d = decide(emailOnly, { customerId: "c1", now: NOW, customer: {}, context: {}, clv: null, seed: "s", explain: true, counters: { [emailBudget]: 1 } });
    const rejected = d.rejectedOffers.find((r) => r.offerId === "o1");
    assert.equal(rejected?.stage, "contact_policy");
    assert.deepEqual(rejected?.detail, { policyId: "bg-email", channelId: "ch-email", key: emailBudget, current: 1, limit: 1 });
    assert.equal(rejected?.reason, "budget bg-email impressions exhausted on channel ch-email: 1/1");
  });

  test("with a decision channel nothing changes: contact policy checks its limits and reserves them once", () => {
    const d = decideWith({}, { channel: "ch-web" });
    assert.deepEqual(served(d), { o1: ["cr-1-web", "ch-web", [webCap]], o2: ["cr-3-web", "ch-web", [webCap]] });
    const capped = decideWith({ [webCap]: 1 }, { channel: "ch-web" });
    assert.deepEqual(capped.offers, []);
    assert.deepEqual(capped.rejectedOffers.find((r) => r.offerId === "o1")?.detail, { policyId: "cap-web", key: webCap, current: 1, limit: 1 });
  });
});

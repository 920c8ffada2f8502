import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { decide, prepareSnapshot, type Offer } from "../../src/core/index.js";

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

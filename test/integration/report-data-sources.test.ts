import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { createTemplate, seedCatalogEntry, seedDecision, seedOffer } from "../support/report-fixtures.js";

/**
 * Every data source against figures worked out by hand from the seeded rows below. The period is
 * 2 and 3 March 2026 in Europe/Berlin (UTC+1): 01 Mar 23:00Z to 03 Mar 23:00Z. Decisions sit on
 * both sides of each local midnight, so a UTC reading of the same dates gives other figures.
 */
let svc: TestService;
let t: { tenantId: string; apiKey: string };
const HOSTILE = "<script>alert(1)</script>";
const ids: Record<string, string> = {};
const BERLIN = { from: "2026-03-02", to: "2026-03-03", timezone: "Europe/Berlin" };

before(async () => {
  svc = await startTestService();
  t = await svc.createTenant("reports-data");
  ids.a = await seedOffer(svc, t.tenantId, HOSTILE);
  ids.b = await seedOffer(svc, t.tenantId, "Bravo");
  ids.web = await seedCatalogEntry(svc, t.tenantId, "channel", "web");
  ids.hero = await seedCatalogEntry(svc, t.tenantId, "placement", "hero");
  ids.email = await seedCatalogEntry(svc, t.tenantId, "channel", "email");
  const a = { offerId: ids.a, channelId: ids.web, placementId: ids.hero };
  const b = { offerId: ids.b, channelId: ids.email };
  // D1: Berlin 2 Mar 00:30 (UTC 1 Mar): A clicked and converted (10), B shown.
  await seedDecision(svc, t.tenantId, { at: "2026-03-01T23:30:00Z", offers: [a, b], qualified: 5, suppressed: 1, rejected: 3,
    outcomes: [{ rank: 1, outcome: "click" }, { rank: 1, outcome: "conversion", value: 10 }] });
  // D2: Berlin 2 Mar 23:30: A dismissed.
  await seedDecision(svc, t.tenantId, { at: "2026-03-02T22:30:00Z", offers: [a], qualified: 4, suppressed: 2, rejected: 4,
    outcomes: [{ rank: 1, outcome: "dismiss" }] });
  // D3: Berlin 3 Mar 00:30 (UTC 2 Mar): no offer, scoring degraded.
  await seedDecision(svc, t.tenantId, { at: "2026-03-02T23:30:00Z", offers: [], qualified: 0, suppressed: 0, degraded: true, rejected: 6 });
  // Outside the Berlin period on both sides: Berlin 4 Mar 00:30 and Berlin 1 Mar 23:30.
  await seedDecision(svc, t.tenantId, { at: "2026-03-03T23:30:00Z", offers: [b], qualified: 1, suppressed: 0, rejected: 0,
    outcomes: [{ rank: 1, outcome: "click", value: 99 }] });
  await seedDecision(svc, t.tenantId, { at: "2026-03-01T22:30:00Z", offers: [a], qualified: 1, suppressed: 0, rejected: 0 });

  // Alert firings: rule R twice in the period (3 deliveries, one failed), once after it.
  ids.rule = randomUUID();
  await svc.sql(
    `INSERT INTO alert_rules (tenant_id, id, name, metric, operator, threshold, channels, status) VALUES ($1, $2, 'Low CTR', 'ctr', 'lt', 0.1, '[]', 'fired')`,
    [t.tenantId, ids.rule],
  );
  const delivery = (slot: string, dest: string, status: string, at: string) =>
    svc.sql(
      `INSERT INTO notification_deliveries (tenant_id, id, kind, dedupe_key, destination_key, destination, status, created_at)
       VALUES ($1, $2, 'alert', $3, $4, '{}', $5, $6)`,
      [t.tenantId, randomUUID(), `alert:${ids.rule}:${slot}`, dest, status, at],
    );
  await delivery("2026-03-02T10:00:00.000Z", "a", "accepted", "2026-03-02T10:00:01Z");
  await delivery("2026-03-02T10:00:00.000Z", "b", "failed", "2026-03-02T10:00:01Z");
  await delivery("2026-03-03T10:00:00.000Z", "a", "accepted", "2026-03-03T10:00:01Z");
  await delivery("2026-03-05T10:00:00.000Z", "a", "accepted", "2026-03-05T10:00:01Z");
});
after(() => svc.stop());

async function preview(sourceKey: string, params: Record<string, unknown>): Promise<any> {
  const template = await createTemplate(svc, t.apiKey, {
    dataSources: [{ sourceKey, params }],
    sections: [{ id: "s", title: sourceKey, dataSourceIndex: 0 }],
    formats: ["csv"],
  });
  const res = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.id}/preview`, { key: t.apiKey, body: {} });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

test("offer_performance: per offer in the Berlin period, the figures worked out by hand", async () => {
  const res = await preview("offer_performance", BERLIN);
  assert.equal(res.timeZone, "Europe/Berlin");
  assert.equal(res.periodFrom, "2026-03-01T23:00:00Z");
  assert.equal(res.periodTo, "2026-03-03T23:00:00Z");
  const s = res.sections[0];
  assert.deepEqual(s.columns.map((c: any) => c.name), ["offer", "offerId", "recommendations", "impressions", "clicks", "positiveResponses", "negativeResponses", "ctr", "conversionRate", "revenue"]);
  assert.deepEqual(s.rows, [
    [HOSTILE, ids.a, 2, 2, 1, 1, 1, 50, 50, 10],
    ["Bravo", ids.b, 1, 1, 0, 0, 0, 0, 0, 0],
  ]);
});

test("decision_volume: days are Berlin's, zero-filled; the same dates in UTC count other decisions", async () => {
  const berlin = await preview("decision_volume", BERLIN);
  assert.deepEqual(berlin.sections[0].rows, [["2026-03-02", 2, 0, 0], ["2026-03-03", 1, 1, 1]]);
  const utc = await preview("decision_volume", { from: "2026-03-02", to: "2026-03-03" });
  assert.equal(utc.timeZone, "UTC");
  assert.deepEqual(utc.sections[0].rows, [["2026-03-02", 2, 1, 1], ["2026-03-03", 1, 0, 0]]);
  const hourly = await preview("decision_volume", { ...BERLIN, granularity: "hour" });
  assert.equal(hourly.sections[0].rows.length, 48);
  assert.deepEqual(hourly.sections[0].rows[0], ["2026-03-02T00:00", 1, 0, 0]);
  assert.deepEqual(hourly.sections[0].rows[47], ["2026-03-03T23:00", 0, 0, 0]);
  const empty = await preview("decision_volume", { from: "2026-02-01", to: "2026-02-02", timezone: "Europe/Berlin" });
  assert.deepEqual(empty.sections[0].rows, [["2026-02-01", 0, 0, 0], ["2026-02-02", 0, 0, 0]]);
});

test("channel_performance: the same measures per channel and placement", async () => {
  const res = await preview("channel_performance", BERLIN);
  assert.deepEqual(res.sections[0].rows, [
    ["web", "hero", 2, 2, 1, 1, 1, 50, 50, 10],
    ["email", null, 1, 1, 0, 0, 0, 0, 0, 0],
  ]);
});

test("funnel: considered → qualification → contact policy → scoring → ranking over the traced decisions", async () => {
  const res = await preview("funnel", BERLIN);
  assert.deepEqual(res.sections[0].rows, [
    ["considered", 16, null, null],
    ["qualification", 9, 7, 43.75],
    ["contact_policy", 6, 3, 33.3333],
    ["scoring", 6, 0, 0],
    ["ranking", 3, 3, 50],
  ]);
});

test("alert_history: firings are evaluation slots, deliveries by outcome, in the period only", async () => {
  const res = await preview("alert_history", BERLIN);
  assert.deepEqual(res.sections[0].rows, [["Low CTR", 2, 3, 2, 1, "2026-03-03T10:00:01.000Z"]]);
});

test("days: the last whole local days before today; from/to instants with offsets are exact", async () => {
  const days = await preview("decision_volume", { days: 3, timezone: "Europe/Berlin" });
  assert.equal(days.sections[0].rows.length, 3);
  const today = new Intl.DateTimeFormat("en-CA", { timeZone: "Europe/Berlin" }).format(new Date());
  assert.ok(days.sections[0].rows[2][0] < today, "today is not part of `days`");
  const exact = await preview("offer_performance", { from: "2026-03-02T00:00:00+01:00", to: "2026-03-02T23:59:59+01:00" });
  assert.deepEqual(exact.sections[0].rows.map((r: any[]) => [r[1], r[3]]), [[ids.a, 2], [ids.b, 1]]);
});

test("experiment_results: the experiment's results route's figures, through the same code", async () => {
  const other = await svc.createTenant("reports-experiment");
  const post = async (path: string, body: unknown) => {
    const res = await rest(svc.baseUrl, "POST", path, { key: other.apiKey, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const champion = await post("/api/v1/algorithm-models", { name: "champ", key: "champ", type: "adaptive", family: "f" });
  const challenger = await post("/api/v1/algorithm-models", { name: "chall", key: "chall", type: "adaptive", family: "f" });
  const experiment = await post("/api/v1/experiments", {
    name: "exp", championModelId: champion.id, trafficSplit: { championPct: 50 }, challengers: [{ modelId: challenger.id, key: "b", trafficPct: 50 }], holdoutPercent: 10,
  });
  const offer = await seedOffer(svc, other.tenantId, "o");
  for (const [variant, samples, conversions] of [["__holdout__", 20, 2], ["__champion__", 40, 6], ["b", 40, 11]] as const) {
    for (let i = 0; i < samples; i++) {
      const rec = randomUUID();
      await svc.sql(`INSERT INTO recommendations (tenant_id, id, customer_id, offers, experiment_id, experiment_variant) VALUES ($1, $2, $3, '[]', $4, $5)`,
        [other.tenantId, rec, `${variant}-${i}`, experiment.id, variant]);
      if (i < conversions) {
        await svc.sql(`INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, offer_id, outcome) VALUES ($1, $2, $3, $4, $5, 'click')`,
          [other.tenantId, randomUUID(), `${variant}-${i}`, rec, offer]);
      }
    }
  }
  const results = await rest(svc.baseUrl, "GET", `/api/v1/experiments/${experiment.id}/results`, { key: other.apiKey });
  assert.equal(results.status, 200, JSON.stringify(results.body));
  const template = await createTemplate(svc, other.apiKey, {
    dataSources: [{ sourceKey: "experiment_results", params: { experimentId: experiment.id } }],
    sections: [{ id: "exp", title: "Experiment", dataSourceIndex: 0 }],
  });
  const res = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.id}/preview`, { key: other.apiKey, body: {} });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  const names = res.body.sections[0].columns.map((c: any) => c.name);
  const rows = res.body.sections[0].rows.map((r: any[]) => Object.fromEntries(names.map((n: string, i: number) => [n, r[i]])));
  assert.equal(rows.length, 3);
  for (const v of results.body.variants) {
    const row = rows.find((r: any) => r.variant === v.variant);
    for (const key of ["samples", "conversions", "rate", "wilsonLower", "wilsonUpper", "absoluteUplift", "relativeUplift", "zScore", "pValue", "significant"]) {
      assert.equal(row[key], v[key] ?? null, `${v.variant}.${key}`);
    }
  }
  assert.equal(rows.find((r: any) => r.variant === "b").conversions, 11);
  // A template that names another tenant's experiment computes nothing of it.
  const foreign = await createTemplate(svc, t.apiKey, {
    dataSources: [{ sourceKey: "experiment_results", params: { experimentId: experiment.id } }],
    sections: [{ id: "exp", title: "Experiment", dataSourceIndex: 0 }],
  });
  const refused = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${foreign.id}/preview`, { key: t.apiKey, body: {} });
  assert.equal(refused.status, 400, JSON.stringify(refused.body));
  assert.match(JSON.stringify(refused.body), /experimentId: unknown experiment/);
});

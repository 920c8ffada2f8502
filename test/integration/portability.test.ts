import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest } from "../support/clients.js";
import { PortabilityService } from "../../gen/decisioning/v1/portability_pb.js";

let svc: TestService;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let a: Tenant;
let b: Tenant;
let viewerB: { apiKey: string };

const call = (t: { apiKey: string }, method: string, path: string, body?: unknown) =>
  rest(svc.baseUrl, method, path, { key: t.apiKey, body: body ?? (method === "GET" || method === "DELETE" ? undefined : {}) });

async function created(t: Tenant, path: string, body: Record<string, unknown>) {
  const res = await call(t, "POST", path, body);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body as any;
}


/** Tenant A's configuration: every kind that references another, so rewiring is exercised. */
const source: Record<string, any> = {};

before(async () => {
  svc = await startTestService();
  a = await svc.createTenant("a");
  b = await svc.createTenant("b");
  viewerB = await svc.createUser(b.tenantId, "viewer");
  source.category = await created(a, "/api/v1/categories", { name: "Cards" });
  source.subCategory = await created(a, "/api/v1/sub-categories", { name: "Gold", categoryId: source.category.id });
  source.channel = await created(a, "/api/v1/channels", { name: "Web", type: "web" });
  source.placement = await created(a, "/api/v1/placements", { name: "Hero", channelId: source.channel.id });
  source.offer = await created(a, "/api/v1/offers", { name: "Gold card", status: "active", categoryId: source.category.id, subCategoryId: source.subCategory.id, priority: 70 });
  // Content reviewed and published in A; an older translation is later linked to the newer item, so
  // the export must put the named item first.
  const reviewer = await svc.createUser(a.tenantId, "editor");
  source.translation = await created(a, "/api/v1/content", { title: "Bannière or", body: "v1 (fr)" });
  source.template = await created(a, "/api/v1/content", { title: "Template", body: "<p>{{name}}</p>", contentType: "html" });
  source.content = await created(a, "/api/v1/content", { title: "Gold banner", body: "v1", parentTemplateId: source.template.id });
  assert.equal((await call(a, "PUT", `/api/v1/content/${source.content.id}`, { body: "v2" })).status, 200);
  for (const [who, move] of [[a, "submit"], [reviewer, "approve"], [a, "publish"]] as const) {
    const res = await call(who, "POST", `/api/v1/content/${source.content.id}/${move}`);
    assert.equal(res.status, 200, `${move}: ${JSON.stringify(res.body)}`);
  }
  assert.equal((await call(a, "PUT", `/api/v1/content/${source.translation.id}`, { sourceId: source.content.id })).status, 200);
  source.creative = await created(a, "/api/v1/creatives", {
    offerId: source.offer.id, name: "banner", channelId: source.channel.id, placementId: source.placement.id, contentId: source.content.id,
  });
  source.profile = await created(a, "/api/v1/ranking-profiles", { name: "Value first", config: { weights: { propensity: 0.5, businessValue: 0.5 } } }).catch(() => null);
  source.champion = await created(a, "/api/v1/algorithm-models", { name: "Champ", key: "champ", type: "logistic_regression", config: { intercept: 0, coefficients: { "offer.priority": 0.01 } } });
  source.challenger = await created(a, "/api/v1/algorithm-models", { name: "Chal", key: "chal", type: "adaptive" });
  source.flow = await created(a, "/api/v1/decision-flows", {
    name: "Main", key: "main", status: "active", offerIds: [source.offer.id],
    config: { nodes: [{ type: "candidates", offerIds: [source.offer.id] }, { type: "score", modelKey: "champ", shadowModelKeys: ["chal"] }, { type: "rank", count: 2 }] },
  });
  assert.equal((await call(a, "POST", `/api/v1/decision-flows/${source.flow.id}/publish`, { notes: "v1" })).status, 200);
  source.experiment = await created(a, "/api/v1/experiments", {
    name: "Champ vs chal", championModelId: source.champion.id, flowId: source.flow.id, trafficSplit: { championPct: 50 },
    challengers: [{ modelId: source.challenger.id, key: "b", trafficPct: 50 }], holdoutPercent: 0,
  });
  source.journey = await created(a, "/api/v1/journeys", { name: "Welcome", steps: [{ type: "decision", count: 1 }] });
  source.trigger = await created(a, "/api/v1/triggers", { name: "Signup", eventType: "signup", action: { type: "journey", journeyId: source.journey.id } });
  source.alert = await created(a, "/api/v1/alerts", {
    name: "Low CTR", metric: "ctr", operator: "lt", threshold: 0.01, channels: [{ type: "webhook", target: "https://example.com/hook" }],
  });
});
after(() => svc.stop());

async function exportOf(t: Tenant) {
  const res = await call(t, "GET", "/api/v1/export/full");
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res;
}

describe("export and import", () => {
  test("the full export is a versioned JSON file without secrets, and only for admins", async () => {
    const res = await exportOf(a);
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.match(res.headers.get("content-disposition") ?? "", /^attachment; filename=".+\.json"$/);
    const file = res.body as any;
    assert.equal(file.formatVersion, 1);
    assert.equal(file.kind, "full");
    assert.deepEqual(file.entities.offers.map((o: any) => o.id), [source.offer.id]);
    assert.equal(file.entities.decisionFlowVersions.length, 1);
    for (const p of file.entities.notificationProviders) assert.equal("secrets" in p, false);
    assert.equal(JSON.stringify(file).includes(b.tenantId), false);
    assert.equal((await call(viewerB, "GET", "/api/v1/export/full")).status, 403);
  });

  test("round trip: A's export imported into B reproduces A's configuration, rewired, in draft", async () => {
    const file = (await exportOf(a)).body as any;
    const res = await call(b, "POST", "/api/v1/import", file);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const report = res.body as any;
    const newId = new Map<string, string>(report.entities.map((e: any) => [e.sourceId, e.id]));
    for (const [kind, rows] of Object.entries(file.entities as Record<string, any[]>)) {
      assert.equal(report.imported[kind] ?? 0, rows.length, kind);
    }
    const imported = (await exportOf(b)).body as any;
    const ignored = new Set([
      "id", "name", "key", "status", "enabled", "registryStatus", "publishedVersion", "startedAt", "publishedBy", "publishedAt",
      "submittedBy", "approvedBy", "approvedVersion", "createdBy",
    ]);
    for (const [kind, rows] of Object.entries(file.entities as Record<string, any[]>)) {
      for (const row of rows) {
        const copy = row.id
          ? imported.entities[kind].find((r: any) => r.id === newId.get(row.id))
          : imported.entities[kind].find((r: any) => (row.flowId ? r.flowId === newId.get(row.flowId) : r.contentId === newId.get(row.contentId)) && r.version === row.version);
        assert.ok(copy, `${kind} ${row.id ?? row.flowId ?? row.contentId} was imported`);
        if (row.name) assert.equal(copy.name, `${row.name} (imported)`);
        if (row.key) assert.match(copy.key, new RegExp(`^${row.key}-imported-[0-9a-f]{6}$`));
        // Every other field is A's, with A's ids and keys replaced by the imported ones.
        let expected = JSON.stringify(Object.fromEntries(Object.entries(row).filter(([f]) => !ignored.has(f))));
        for (const [from, to] of newId) expected = expected.split(from).join(to);
        for (const e of report.entities.filter((x: any) => x.key)) {
          const sourceKey = file.entities[e.kind].find((r: any) => r.id === e.sourceId).key;
          expected = expected.split(`"${sourceKey}"`).join(`"${e.key}"`);
        }
        const actual = JSON.stringify(Object.fromEntries(Object.entries(copy).filter(([f]) => !ignored.has(f))));
        if (kind === "outcomeTypes" || kind === "algorithmModels") {
          // outcome keys and model keys are rewired only where a ...Key property names them
          assert.deepEqual(JSON.parse(actual).config ?? null, JSON.parse(expected).config ?? null, `${kind} config`);
        } else if (kind !== "offers") {
          assert.equal(actual, expected, `${kind} ${row.id}`);
        }
      }
    }
    const offer = imported.entities.offers.find((o: any) => o.id === newId.get(source.offer.id));
    assert.equal(offer.status, "draft");
    assert.equal(offer.categoryId, newId.get(source.category.id));
    const flow = imported.entities.decisionFlows.find((f: any) => f.id === newId.get(source.flow.id));
    assert.equal(flow.status, "draft");
    assert.deepEqual(flow.offerIds, [newId.get(source.offer.id)]);
    assert.equal(flow.config.nodes[1].modelKey, report.entities.find((e: any) => e.sourceId === source.champion.id).key);
    const experiment = imported.entities.experiments.find((e: any) => e.id === newId.get(source.experiment.id));
    assert.equal(experiment.status, "draft");
    assert.equal(experiment.championModelId, newId.get(source.champion.id));
    assert.equal(experiment.challengers[0].modelId, newId.get(source.challenger.id));
    assert.equal(imported.entities.algorithmModels.every((m: any) => m.registryStatus === "draft"), true);
    const trigger = imported.entities.triggerRules.find((r: any) => r.id === newId.get(source.trigger.id));
    assert.equal(trigger.status, "inactive");
    assert.equal(trigger.action.journeyId, newId.get(source.journey.id), "the rule enrols into the imported journey");
    assert.equal(imported.entities.journeys.find((j: any) => j.id === newId.get(source.journey.id)).status, "inactive");
    // Content: every version (3 is the publish snapshot of 2), the item in draft with nothing
    // published, the creative naming the copy.
    const content = imported.entities.contentItems.find((c: any) => c.id === newId.get(source.content.id));
    assert.deepEqual([content.status, content.version, content.body, content.publishedVersion, content.approvedBy], ["draft", 3, "v2", null, null]);
    assert.equal(content.parentTemplateId, newId.get(source.template.id));
    assert.deepEqual(imported.entities.contentVersions.filter((v: any) => v.contentId === content.id).map((v: any) => [v.version, v.body, v.publishedAt]), [[1, "v1", null], [2, "v2", null], [3, "v2", null]]);
    assert.equal(imported.entities.contentItems.findIndex((c: any) => c.id === content.id) < imported.entities.contentItems.findIndex((c: any) => c.sourceId === content.id), true, "the named item is exported first");
    const creative = imported.entities.creatives.find((c: any) => c.id === newId.get(source.creative.id));
    assert.equal(creative.contentId, content.id, "the imported creative names the imported content");
    const read = await call(b, "GET", `/api/v1/content/${content.id}`);
    assert.equal(read.status, 200);
    assert.equal((read.body as any).versions.length, 3);
    // The next edit continues the imported history.
    const edited = await call(b, "PUT", `/api/v1/content/${content.id}`, { body: "v3" });
    assert.deepEqual([edited.status, (edited.body as any).version], [200, 4]);
    const alert = imported.entities.alertRules.find((r: any) => r.id === newId.get(source.alert.id));
    assert.equal(alert.enabled, false);
    assert.equal(alert.threshold, 0.01);
    // Nothing of A is readable from B, and A is unchanged.
    assert.equal((await call(b, "GET", `/api/v1/offers/${source.offer.id}`)).status, 404);
    assert.equal((await call(b, "GET", `/api/v1/decision-flows/${source.flow.id}`)).status, 404);
    assert.equal(JSON.stringify(imported).includes(source.offer.id), false);
    assert.equal((await call(b, "GET", `/api/v1/offers/${newId.get(source.offer.id)}`)).status, 200);
    assert.equal((await call(a, "GET", `/api/v1/offers/${newId.get(source.offer.id)}`)).status, 404);
    const audit = await svc.sql("SELECT count(*)::int AS n FROM audit_log WHERE tenant_id = $1 AND action = 'create' AND changes->>'imported' = 'true'", [b.tenantId]);
    assert.equal(audit[0].n, report.entities.length);
  });

  test("a creative naming content that is neither in the file nor in the tenant is a 400 naming contentId; nothing is written", async () => {
    const file = (await exportOf(a)).body as any;
    const c = await svc.createTenant("c");
    const entities = { offers: file.entities.offers.map((o: any) => ({ ...o, categoryId: null, subCategoryId: null })), creatives: [{ ...file.entities.creatives[0], channelId: null, placementId: null }] };
    const res = await call(c, "POST", "/api/v1/import", { ...file, entities });
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body), /entities\.creatives\[0\]\.contentId: names .*, which is no content item in the file or in this tenant/);
    assert.deepEqual(await svc.sql("SELECT id FROM offers WHERE tenant_id = $1", [c.tenantId]), []);
  });

  test("import holds every row to the write routes' rules and checks ids named inside JSON configs: 400 naming kind, index and field, nothing written", async () => {
    const file = (await exportOf(a)).body as any;
    const e = file.entities;
    const dangling = "7f2c1a4e-0000-4000-8000-00000000abcd";
    const bare = (o: any) => ({ ...o, categoryId: null, subCategoryId: null });
    const flow = e.decisionFlows[0];
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ offers: [{ ...bare(e.offers[0]), priority: 500 }] }, /entities\.offers\[0\]\.priority: must be between 0 and 100/],
      [{ offers: [{ ...bare(e.offers[0]), eligibility: { attribute: "age", operator: "bogus", value: 1 } }] }, /entities\.offers\[0\]\.eligibility/],
      [{ budgets: [{ id: dangling, name: "No limit", scope: "global", scopeId: null, period: "lifetime", status: "active" }] }, /entities\.budgets\[0\]\.maxImpressions: at least one/],
      [{ budgets: [{ id: dangling, name: "Offer cap", scope: "offer", scopeId: e.offers[0].id, maxImpressions: 10, period: "day" }] }, /entities\.budgets\[0\]\.scopeId: names .*, which is no offer/],
      [{ algorithmModels: [{ ...e.algorithmModels[0], type: "bogus" }] }, /entities\.algorithmModels\[0\]\.type: must be one of/],
      [{ offers: [bare(e.offers[0])], algorithmModels: e.algorithmModels, decisionFlows: [{ ...flow, config: { nodes: [flow.config.nodes[0], { type: "score", modelKey: "nowhere" }] } }] }, /entities\.decisionFlows\[0\]\.config\.nodes\[1\]\.modelKey: names nowhere, which is no algorithm model/],
      [{ offers: [bare(e.offers[0])], decisionFlows: [{ ...flow, config: { nodes: [flow.config.nodes[0], { type: "rank", count: 2, profileId: dangling }] } }] }, /entities\.decisionFlows\[0\]\.config\.nodes\[1\]\.profileId: names 7f2c1a4e-.*, which is no ranking profile/],
      [{ journeys: e.journeys, triggerRules: [{ ...e.triggerRules[0], action: { type: "journey", journeyId: dangling } }] }, /entities\.triggerRules\[0\]\.action\.journeyId: names 7f2c1a4e/],
      [{ algorithmModels: e.algorithmModels, experiments: [{ ...e.experiments[0], flowId: null, challengers: [{ ...e.experiments[0].challengers[0], modelId: dangling }] }] }, /entities\.experiments\[0\]\.challengers\[0\]\.modelId: names 7f2c1a4e/],
      [{ alertRules: [{ ...e.alertRules[0], channels: [dangling] }] }, /entities\.alertRules\[0\]\.channels\[0\]: names 7f2c1a4e-.*, which is no notification provider/],
      [{ alertRules: [{ ...e.alertRules[0], channels: [{ type: "webhook", target: "ftp://x" }] }] }, /entities\.alertRules\[0\]\.channels\[0\]\.target: must be an http or https URL/],
      [{ contentItems: [{ ...e.contentItems[0], title: " ", parentTemplateId: null, sourceId: null }] }, /entities\.contentItems\[0\]\.title: must not be empty/],
      [{ journeys: [{ ...e.journeys[0], steps: [{ type: "wait" }] }] }, /entities\.journeys\[0\]\.steps\[0\]\.type: must be one of decision/],
      [{ journeys: e.journeys, triggerRules: [{ ...e.triggerRules[0], conditions: { attribute: "x", op: "bogus", value: 1 } }] }, /entities\.triggerRules\[0\]\.conditions/],
    ];
    // Import is limited to 10 per minute per tenant: a fresh tenant for every few cases.
    let target = await svc.createTenant("strict");
    for (const [i, [entities, message]] of cases.entries()) {
      if (i % 6 === 5) target = await svc.createTenant("strict");
      const res = await call(target, "POST", "/api/v1/import", { ...file, entities });
      assert.equal(res.status, 400, `case ${i}: ${JSON.stringify(res.body).slice(0, 400)}`);
      assert.match(JSON.stringify(res.body), message, `case ${i}`);
      const written = await svc.sql(
        `SELECT (SELECT count(*) FROM offers WHERE tenant_id = $1) + (SELECT count(*) FROM algorithm_models WHERE tenant_id = $1)
           + (SELECT count(*) FROM journeys WHERE tenant_id = $1) + (SELECT count(*) FROM budgets WHERE tenant_id = $1)
           + (SELECT count(*) FROM content_items WHERE tenant_id = $1) AS n`,
        [target.tenantId],
      );
      assert.equal(Number(written[0].n), 0, `case ${i}: nothing written`);
    }
  });

  test("single flow and model exports; cross-tenant ids are 404", async () => {
    const flow = await call(a, "GET", `/api/v1/export/decision-flows/${source.flow.id}`);
    assert.equal(flow.status, 200);
    assert.equal((flow.body as any).kind, "decision_flow");
    assert.equal((flow.body as any).entities.decisionFlowVersions.length, 1);
    const model = await call(a, "GET", `/api/v1/export/models/${source.champion.id}`);
    assert.equal(model.status, 200);
    assert.ok((model.body as any).entities.algorithmModels[0].versions.length >= 1);
    assert.doesNotMatch(JSON.stringify(model.body), new RegExp(a.tenantId), "no file names its tenant");
    assert.doesNotMatch(JSON.stringify(flow.body), new RegExp(a.tenantId));
    assert.equal((await call(b, "GET", `/api/v1/export/decision-flows/${source.flow.id}`)).status, 404);
    assert.equal((await call(b, "GET", `/api/v1/export/models/${source.champion.id}`)).status, 404);
    assert.equal((await call(b, "GET", `/api/v1/export/models/not-an-id`)).status, 404);
    // A single flow imports into its own tenant beside the original.
    const again = await call(a, "POST", "/api/v1/import", flow.body);
    assert.equal(again.status, 201, JSON.stringify(again.body));
    assert.equal((again.body as any).imported.decisionFlows, 1);
  });

  test("gRPC and Connect serve the same file; the full export and import are limited to 10 per minute", async () => {
    const t = await svc.createTenant("limits");
    const headers = { headers: { "x-api-key": t.apiKey } };
    const viaGrpc = await grpcClient(PortabilityService, svc.grpcAddress).exportFull({}, headers);
    const viaConnect = await connectClient(PortabilityService, svc.baseUrl, true).exportFull({}, headers);
    // Connect's JSON writes the packed DownloadDisposition too.
    const connectJson = await rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.PortabilityService/ExportFull", { key: t.apiKey, body: {} });
    assert.equal(connectJson.status, 200, JSON.stringify(connectJson.body));
    assert.equal((connectJson.body as any).contentType, "application/json");
    assert.equal(viaGrpc.contentType, "application/json");
    const file = JSON.parse(new TextDecoder().decode(viaConnect.data));
    assert.equal(file.formatVersion, 1);
    assert.deepEqual(Object.keys(JSON.parse(new TextDecoder().decode(viaGrpc.data)).entities), Object.keys(file.entities));
    const statuses: number[] = [];
    // The gRPC and Connect calls counted too: seven more make ten.
    for (let i = 0; i < 7; i++) statuses.push((await call(t, "GET", "/api/v1/export/full")).status);
    assert.deepEqual(statuses, Array(7).fill(200));
    const limited = await call(t, "GET", "/api/v1/export/full");
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
    // Import counts in its own window.
    const imported = await call(t, "POST", "/api/v1/import", { formatVersion: 1, kind: "full", entities: {} });
    assert.equal(imported.status, 201, JSON.stringify(imported.body));
  });

  test("what a write route stores and the export writes, import accepts: a channel created without a type (null) exports and re-imports", async () => {
    const t = await svc.createTenant("untyped-channel");
    const channel = await created(t, "/api/v1/channels", { name: "web" });
    const file = (await exportOf(t)).body as any;
    const row = file.entities.channels.find((c: any) => c.id === channel.id);
    assert.equal(row.type, null);
    for (const into of [t, await svc.createTenant("untyped-channel-target")]) {
      const res = await call(into, "POST", "/api/v1/import", file);
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const id = res.body.entities.find((e: any) => e.kind === "channels" && e.sourceId === channel.id).id;
      const [stored] = await svc.sql("SELECT name, type FROM catalog_entries WHERE tenant_id = $1 AND id = $2", [into.tenantId, id]);
      assert.deepEqual(stored, { name: "web (imported)", type: null });
    }
    // A null in a field that is neither required nor clearable is that field left unset: the column's
    // default, as a create without it, never a value no write could store.
    const offer = { ...(await exportOf(a)).body.entities.offers[0], name: "Unset priority", categoryId: null, subCategoryId: null, priority: null };
    const res = await call(t, "POST", "/api/v1/import", { formatVersion: 1, kind: "full", entities: { offers: [offer] } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const direct = await created(t, "/api/v1/offers", { name: "Default priority" });
    const [stored] = await svc.sql("SELECT priority FROM offers WHERE tenant_id = $1 AND id = $2", [t.tenantId, res.body.entities[0].id]);
    assert.equal(stored.priority, direct.priority);
  });

  test("rows that belong to a deleted offer are left out, so the export imports back: a creative (single-offer delete does not cascade) and a budget", async () => {
    const t = await svc.createTenant("deleted-owner");
    const offer = await created(t, "/api/v1/offers", { name: "Gone" });
    const kept = await created(t, "/api/v1/offers", { name: "Kept" });
    const orphan = await created(t, "/api/v1/creatives", { name: "orphan", offerId: offer.id });
    const live = await created(t, "/api/v1/creatives", { name: "live", offerId: kept.id });
    const budget = await created(t, "/api/v1/budgets", { scope: "offer", scopeId: offer.id, maxImpressions: 5 });
    assert.equal((await call(t, "DELETE", `/api/v1/offers/${offer.id}`, {})).status, 204);
    const file = (await exportOf(t)).body as any;
    assert.deepEqual(file.entities.creatives.map((c: any) => c.id), [live.id]);
    assert.equal(file.entities.budgets.some((b: any) => b.id === budget.id), false);
    assert.ok(orphan.id);
    for (const into of [t, await svc.createTenant("deleted-owner-target")]) {
      const res = await call(into, "POST", "/api/v1/import", file);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
  });

  test("bad files are 400s that say what is wrong, and nothing is written", async () => {
    const before = await svc.sql("SELECT count(*)::int AS n FROM offers WHERE tenant_id = $1", [b.tenantId]);
    const file = (await exportOf(a)).body as any;
    const plainOffer = { ...file.entities.offers[0], name: "Fresh offer", categoryId: null, subCategoryId: null };
    const cases: Array<[unknown, number, RegExp]> = [
      [{ hello: "world" }, 400, /not an export file/],
      [{ ...file, formatVersion: 99 }, 400, /formatVersion: unsupported export format version 99/],
      [{ ...file, entities: { widgets: [] } }, 400, /entities\.widgets: unknown entity kind/],
      [{ ...file, entities: { offers: Array.from({ length: 501 }, () => file.entities.offers[0]) } }, 400, /entities\.offers: at most 500 items per kind, got 501/],
      // The flow comes last and is invalid: the offers before it must not stay.
      [{ ...file, entities: { offers: [plainOffer], decisionFlows: [{ ...file.entities.decisionFlows[0], config: { nodes: [{ type: "bogus" }] } }] } }, 400, /entities\.decisionFlows\[0\]\.config\.nodes\[0\]\.type/],
      [{ ...file, entities: { offers: [{ ...plainOffer, priority: "high" }] } }, 400, /entities\.offers\[0\]/],
      // B imported A's offer already: the same name again is a conflict.
      [{ ...file, entities: { offers: [{ ...plainOffer, name: "Gold card" }] } }, 409, /entities\.offers\[0\]: a offer named .*Gold card \(imported\).* already exists/],
      // A reference must name an entity of the right kind: a channel is no category.
      [{ ...file, entities: { channels: file.entities.channels, subCategories: [{ ...file.entities.subCategories[0], categoryId: file.entities.channels[0].id }] } }, 400, /entities\.subCategories\[0\]\.categoryId: names .*, which is no category/],
      [{ ...file, entities: { creatives: [{ ...file.entities.creatives[0], offerId: "7f2c1a4e-0000-4000-8000-000000000000" }] } }, 400, /entities\.creatives\[0\]\.offerId: names 7f2c1a4e/],
    ];
    for (const [body, status, message] of cases) {
      const res = await call(b, "POST", "/api/v1/import", body);
      assert.equal(res.status, status, JSON.stringify(res.body).slice(0, 300));
      assert.match(JSON.stringify(res.body), message);
    }
    const malformed = await rest(svc.baseUrl, "POST", "/api/v1/import", { key: b.apiKey, rawBody: "{not json", headers: { "content-type": "application/json" } });
    assert.equal(malformed.status, 400);
    const huge = await rest(svc.baseUrl, "POST", "/api/v1/import", { key: b.apiKey, rawBody: JSON.stringify({ formatVersion: 1, entities: {}, pad: "x".repeat(10_500_000) }), headers: { "content-type": "application/json" } });
    assert.equal(huge.status, 413);
    assert.equal((await call(viewerB, "POST", "/api/v1/import", file)).status, 403);
    const afterCount = await svc.sql("SELECT count(*)::int AS n FROM offers WHERE tenant_id = $1", [b.tenantId]);
    assert.equal(afterCount[0].n, before[0].n);
  });
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, rest } from "../support/clients.js";
import { BudgetService } from "../../gen/decisioning/v1/configuration_pb.js";

let svc: TestService;
let admin: { tenantId: string; userId: string; apiKey: string };
let editor: { userId: string; apiKey: string };
let other: { tenantId: string; userId: string; apiKey: string };

const call = (method: string, path: string, body?: unknown, key = admin.apiKey) =>
  rest(svc.baseUrl, method, path, { key, body: body ?? (method === "GET" ? undefined : {}) });

before(async () => {
  svc = await startTestService();
  admin = await svc.createTenant();
  editor = await svc.createUser(admin.tenantId, "editor");
  other = await svc.createTenant("other");
});
after(() => svc.stop());

describe("decision rules", () => {
  test("each rule collection validates its config against the core's shape, naming the path", async () => {
    const category = await call("POST", "/api/v1/categories", { name: "rules category" });
    const cases: Array<[string, unknown, RegExp]> = [
      ["qualification-rules", { condition: { attribute: "customer.age", op: "gte", value: 18 } }, /^config\.onMisssing: unknown key/],
      ["contact-policies", { scope: "offer", maxImpressions: 3, windowSeconds: 86400 }, /^config\.windowSeconds: must be an integer/],
      ["guardrail-rules", { condition: { attribute: "customer.age", op: "lt", value: 18 }, action: "exclude" }, /^config\.condition/],
      ["ranking-profiles", { weights: { score: 1, priority: 0.2 } }, /^config\.weights/],
      ["cross-offer-constraints", { type: "max_per_category", categoryId: category.body.id, max: 1 }, /config\.type: must be mutual_exclusion or max_per_category/],
      ["segments", { condition: { attribute: "customer.tier", op: "eq", value: "gold" } }, /^config\.condition/],
      ["decisioning-gates", { condition: { attribute: "customer.age", op: "gte", value: 18 }, onMissing: "block" }, /^config\.onMisssing: unknown key/],
    ];
    // Spec 2.20: onMissing defaults to skip, and a read shows the default that applies.
    const defaulted = new Set(["qualification-rules", "guardrail-rules", "decisioning-gates"]);
    const broken: Record<string, unknown> = {
      "qualification-rules": { condition: { attribute: "customer.age", op: "gte", value: 18 }, onMisssing: "skip" },
      "decisioning-gates": { condition: { attribute: "customer.age", op: "gte", value: 18 }, onMisssing: "skip" },
      "contact-policies": { scope: "offer", maxImpressions: 3, windowSeconds: -5 },
      "guardrail-rules": { condition: { attribute: "customer.age", op: "older_than", value: 18 }, action: "exclude" },
      "ranking-profiles": { weights: { score: "high" } },
      "cross-offer-constraints": { type: "at_most", categoryId: "c", max: 1 },
      segments: { condition: { all: "gold" } },
    };
    for (const [collection, config, problem] of cases) {
      const created = await call("POST", `/api/v1/${collection}`, { name: `${collection} one`, config });
      assert.equal(created.status, 201, `${collection}: ${JSON.stringify(created.body)}`);
      assert.equal(created.body.status, "active");
      const explicit = (config as { onMissing?: string }).onMissing;
      assert.deepEqual(created.body.config, defaulted.has(collection) && !explicit ? { onMissing: "skip", ...(config as object) } : config, collection);
      const bad = await call("POST", `/api/v1/${collection}`, { name: `${collection} bad`, config: broken[collection] });
      assert.equal(bad.status, 400, collection);
      assert.match(bad.body.detail, problem, collection);
      const missing = await call("POST", `/api/v1/${collection}`, { name: `${collection} none` });
      assert.equal(missing.status, 400);
      assert.match(missing.body.detail, /^config: is required/);
      const off = await call("PUT", `/api/v1/${collection}`, { id: created.body.id, status: "inactive" });
      assert.equal(off.status, 200);
      assert.equal(off.body.version, 2);
      assert.equal((await call("GET", `/api/v1/${collection}/${created.body.id}`, undefined, other.apiKey)).status, 404);
    }
  });

  test("ids inside a config must name live entries of the tenant (spec 7: 400 naming the path); only the ids a write adds are checked", async () => {
    const offer = await call("POST", "/api/v1/offers", { name: "rule target", status: "active" });
    const theirOffer = await call("POST", "/api/v1/offers", { name: "their offer" }, other.apiKey);
    const theirCategory = await call("POST", "/api/v1/categories", { name: "their category" }, other.apiKey);
    const channel = await call("POST", "/api/v1/channels", { name: "rules channel" });
    const condition = { attribute: "customer.age", op: "gte", value: 18 };
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["qualification-rules", { condition, appliesTo: { offerIds: [offer.body.id, theirOffer.body.id] } }, "config.appliesTo.offerIds[1]"],
      ["decisioning-gates", { condition, appliesTo: { categoryIds: [theirCategory.body.id] } }, "config.appliesTo.categoryIds[0]"],
      ["guardrail-rules", { condition, action: "exclude", appliesTo: { offerIds: ["not-an-id"] } }, "config.appliesTo.offerIds[0]"],
      ["contact-policies", { scope: "offer", scopeId: theirOffer.body.id, maxImpressions: 1, windowSeconds: 60 }, "config.scopeId"],
      ["contact-policies", { scope: "channel", scopeId: offer.body.id, maxImpressions: 1, windowSeconds: 60 }, "config.scopeId"],
      ["cross-offer-constraints", { type: "mutual_exclusion", offerIds: [offer.body.id, theirOffer.body.id.toUpperCase()] }, "config.offerIds[1]"],
      ["cross-offer-constraints", { type: "max_per_category", categoryId: theirCategory.body.id, max: 1 }, "config.categoryId"],
    ];
    for (const [collection, config, field] of cases) {
      const res = await call("POST", `/api/v1/${collection}`, { name: `refs ${field} ${collection}`, config });
      assert.equal(res.status, 400, `${collection} ${JSON.stringify(config)}: ${JSON.stringify(res.body)}`);
      assert.deepEqual(res.body.errors.map((e: any) => e.field), [field], collection);
      assert.match(res.body.detail, /: unknown (offer|category|channel) /);
    }
    const flow = await call("POST", "/api/v1/decision-flows", {
      name: "refs flow",
      key: "refs-flow",
      config: { nodes: [{ type: "candidates", offerIds: [offer.body.id], categoryIds: [theirCategory.body.id] }, { type: "rank" }] },
    });
    assert.equal(flow.status, 400, JSON.stringify(flow.body));
    assert.deepEqual(flow.body.errors.map((e: any) => e.field), ["config.nodes[0].categoryIds[0]"]);
    assert.equal((await call("GET", "/api/v1/qualification-rules?limit=100")).body.data.filter((r: any) => r.name.startsWith("refs ")).length, 0, "nothing written");

    // Good references are stored; once the offer is deleted the rule can still be edited, but not pointed at another unknown id.
    const policy = await call("POST", "/api/v1/contact-policies", { name: "refs ok", config: { scope: "channel", scopeId: channel.body.id, maxImpressions: 1, windowSeconds: 60 } });
    assert.equal(policy.status, 201, JSON.stringify(policy.body));
    const exclusion = await call("POST", "/api/v1/cross-offer-constraints", { name: "refs exclusion", config: { type: "mutual_exclusion", offerIds: [offer.body.id, (await call("POST", "/api/v1/offers", { name: "rule target 2" })).body.id] } });
    assert.equal(exclusion.status, 201, JSON.stringify(exclusion.body));
    assert.equal((await call("DELETE", `/api/v1/offers/${offer.body.id}`)).status, 204);
    const renamed = await call("PUT", "/api/v1/cross-offer-constraints", { id: exclusion.body.id, name: "refs exclusion renamed", config: exclusion.body.config });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    const retargeted = await call("PUT", "/api/v1/cross-offer-constraints", { id: exclusion.body.id, config: { ...exclusion.body.config, offerIds: [...exclusion.body.config.offerIds, theirOffer.body.id] } });
    assert.equal(retargeted.status, 400);
    assert.deepEqual(retargeted.body.errors.map((e: any) => e.field), ["config.offerIds[2]"]);
  });
});

describe("budgets (spec 2.19, 4.16)", () => {
  test("at least one limit; scoped budgets name a live entity of the tenant; admin deletes", async () => {
    const none = await call("POST", "/api/v1/budgets", { name: "empty" });
    assert.equal(none.status, 400);
    assert.match(none.body.detail, /^maxImpressions: at least one of maxImpressions, maxSpend and maxConversions is required/);
    const unscoped = await call("POST", "/api/v1/budgets", { name: "x", scope: "offer", maxImpressions: 10 });
    assert.match(unscoped.body.detail, /^scopeId: is required for scope offer/);
    const theirOffer = await call("POST", "/api/v1/offers", { name: "theirs" }, other.apiKey);
    const foreign = await call("POST", "/api/v1/budgets", { name: "x", scope: "offer", scopeId: theirOffer.body.id, maxImpressions: 10 });
    assert.equal(foreign.status, 400);
    assert.match(foreign.body.detail, /^scopeId: unknown offer/);
    assert.equal((await call("POST", "/api/v1/budgets", { name: "x", maxSpend: -1 })).status, 400);

    const offer = await call("POST", "/api/v1/offers", { name: "budgeted" });
    const created = await call("POST", "/api/v1/budgets", { name: "launch", scope: "offer", scopeId: offer.body.id, maxImpressions: 100, costPerImpression: 0.05, maxSpend: 5, period: "day" });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(
      { scope: created.body.scope, maxImpressions: created.body.maxImpressions, maxConversions: created.body.maxConversions, period: created.body.period, status: created.body.status, version: created.body.version },
      { scope: "offer", maxImpressions: 100, maxConversions: null, period: "day", status: "active", version: 1 },
    );
    const cleared = await call("PUT", "/api/v1/budgets", { id: created.body.id, maxImpressions: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.maxImpressions, null);
    assert.equal(cleared.body.maxSpend, 5);
    const allGone = await call("PUT", "/api/v1/budgets", { id: created.body.id, maxSpend: null });
    assert.equal(allGone.status, 400, "clearing the last limit is refused");
    const list = await call("GET", "/api/v1/budgets");
    assert.ok(list.body.data.some((b: any) => b.id === created.body.id));
    assert.equal((await call("DELETE", `/api/v1/budgets?id=${created.body.id}`, undefined, editor.apiKey)).status, 403);
    assert.equal((await call("DELETE", `/api/v1/budgets?id=${created.body.id}`, undefined, other.apiKey)).status, 404);
    const removed = await call("DELETE", `/api/v1/budgets?id=${created.body.id}`);
    assert.deepEqual([removed.status, removed.body], [204, null], "spec 7: 204 without a body");
  });

  test("a body of the spec's fields only (2.19) is created with a generated unique name; a sent name is still checked", async () => {
    const first = await call("POST", "/api/v1/budgets", { scope: "global", maxImpressions: 1000 });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.match(first.body.name, /^budget-[0-9a-f]{12}$/);
    assert.equal(first.body.maxImpressions, 1000);
    const second = await call("POST", "/api/v1/budgets", { maxConversions: 5 }, editor.apiKey);
    assert.equal(second.status, 201, JSON.stringify(second.body));
    assert.notEqual(second.body.name, first.body.name);
    // Connect's binary door sends no update mask: the name is generated there too.
    const viaConnect = await connectClient(BudgetService, svc.baseUrl, true).createBudget({ maxSpend: 10 }, { headers: { "x-api-key": admin.apiKey } });
    assert.match(viaConnect.name, /^budget-[0-9a-f]{12}$/);
    const blank = await call("POST", "/api/v1/budgets", { name: " ", maxImpressions: 1 });
    assert.equal(blank.status, 400);
    assert.match(blank.body.detail, /^name: must not be empty/);
    const taken = await call("POST", "/api/v1/budgets", { name: first.body.name, maxImpressions: 1 });
    assert.equal(taken.status, 409);
  });
});

describe("algorithm models", () => {
  test("imported models are checked by compiling them; registryStatus is not writable", async () => {
    const logistic = await call("POST", "/api/v1/algorithm-models", {
      name: "Churn LR",
      key: "churn-lr",
      type: "logistic_regression",
      config: { intercept: -1.5, coefficients: { "customer.age": 0.02, "context.visits": 0.3 } },
    });
    assert.equal(logistic.status, 201, JSON.stringify(logistic.body));
    assert.equal(logistic.body.registryStatus, "draft");
    const bad = await call("POST", "/api/v1/algorithm-models", {
      name: "Broken", key: "broken", type: "logistic_regression", config: { intercept: "high", coefficients: {} },
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /^config\.intercept: /);
    const trees = await call("POST", "/api/v1/algorithm-models", {
      name: "GBT", key: "gbt", type: "gradient_boosted", config: { trees: [{ nodeid: 0, split: "customer.age", split_condition: 30, yes: 1, no: 2 }] },
    });
    assert.equal(trees.status, 400, "a split without its children is refused");
    assert.equal((await call("POST", "/api/v1/algorithm-models", { name: "x", key: "x", type: "neural" })).status, 400);
    const offerBucket = await call("POST", "/api/v1/algorithm-models", { name: "By category", key: "by-category", type: "adaptive", config: { bucketBy: ["offer.categoryId"] } });
    assert.equal(offerBucket.status, 400, "evidence is per offer already: an offer field is no bucket");
    assert.match(offerBucket.body.detail, /^config\.bucketBy\[0\]: /);
    const dup = await call("POST", "/api/v1/algorithm-models", { name: "Churn LR 2", key: "churn-lr", type: "adaptive" });
    assert.equal(dup.status, 409);

    const updated = await call("PUT", `/api/v1/algorithm-models/${logistic.body.id}`, { description: "v2", registryStatus: "champion" });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.description, "v2");
    assert.equal(updated.body.registryStatus, "draft");
    assert.equal(updated.body.version, 2);
    assert.equal((await call("GET", `/api/v1/algorithm-models/${logistic.body.id}`, undefined, other.apiKey)).status, 404);
  });
});

describe("decision flows", () => {
  test("auto-assembly adds active offers to active flows, audit-logged", async () => {
    const flow = await call("POST", "/api/v1/decision-flows", { name: "Main", key: "main", status: "active" });
    assert.equal(flow.status, 201, JSON.stringify(flow.body));
    assert.deepEqual(flow.body.config.nodes.map((n: any) => n.type), ["candidates", "score", "rank"]);
    assert.equal(flow.body.autoAssemble, true);
    assert.equal(flow.body.publishedVersion, null);
    const draftOffer = await call("POST", "/api/v1/offers", { name: "draft offer" });
    const activeOffer = await call("POST", "/api/v1/offers", { name: "active offer", status: "active" });
    let current = await call("GET", `/api/v1/decision-flows/${flow.body.id}`);
    assert.deepEqual(current.body.offerIds, [activeOffer.body.id]);
    await call("PUT", "/api/v1/offers", { id: draftOffer.body.id, status: "active" });
    current = await call("GET", `/api/v1/decision-flows/${flow.body.id}`);
    assert.deepEqual(current.body.offerIds, [activeOffer.body.id, draftOffer.body.id]);
    await call("DELETE", `/api/v1/offers?id=${activeOffer.body.id}`);
    current = await call("GET", `/api/v1/decision-flows/${flow.body.id}`);
    assert.deepEqual(current.body.offerIds, [draftOffer.body.id]);
    // Leaving active takes the offer out of auto-assembling flows (spec 3.1: a status PUT triggers auto-assembly); a fixed list keeps it.
    const fixed = await call("POST", "/api/v1/decision-flows", { name: "Fixed", key: "fixed", status: "active", autoAssemble: false, offerIds: [draftOffer.body.id] });
    assert.equal(fixed.status, 201, JSON.stringify(fixed.body));
    await call("PUT", "/api/v1/offers", { id: draftOffer.body.id, status: "paused" });
    assert.deepEqual((await call("GET", `/api/v1/decision-flows/${flow.body.id}`)).body.offerIds, []);
    assert.deepEqual((await call("GET", `/api/v1/decision-flows/${fixed.body.id}`)).body.offerIds, [draftOffer.body.id]);
    await call("PUT", `/api/v1/offers/${draftOffer.body.id}`, { status: "active" });
    assert.deepEqual((await call("GET", `/api/v1/decision-flows/${flow.body.id}`)).body.offerIds, [draftOffer.body.id]);
    const history = await call("GET", `/api/v1/change-history?entityId=${flow.body.id}`);
    assert.equal(history.body.changes.filter((c: any) => /auto-assembly/.test(c.changes.reason ?? "")).length, 5);
    // A flow that starts serving later lists the active offers it would have collected: at create, or when it becomes active.
    const late = await call("POST", "/api/v1/decision-flows", { name: "Late", key: "late", status: "active" });
    assert.deepEqual(late.body.offerIds, [draftOffer.body.id]);
    const drafted = await call("POST", "/api/v1/decision-flows", { name: "Drafted", key: "drafted" });
    assert.deepEqual(drafted.body.offerIds, [], "a draft flow is not assembled");
    const activated = await call("PUT", `/api/v1/decision-flows/${drafted.body.id}`, { status: "active" });
    assert.deepEqual(activated.body.offerIds, [draftOffer.body.id]);
  });

  test("publish and rollback create versions, each in the change feed", async () => {
    const model = await call("POST", "/api/v1/algorithm-models", { name: "Formula", key: "formula-1", type: "formula", config: {} });
    assert.equal(model.status, 201, JSON.stringify(model.body));
    const flow = await call("POST", "/api/v1/decision-flows", { name: "Versioned", key: "versioned" });
    const id = flow.body.id;
    const v1 = await call("POST", `/api/v1/decision-flows/${id}/publish`, { notes: "first" });
    assert.equal(v1.status, 200, JSON.stringify(v1.body));
    assert.equal(v1.body.publishedVersion, 1);
    const nodes = [{ type: "candidates" }, { type: "score", modelKey: "formula-1" }, { type: "rank", count: 2 }];
    const edited = await call("PUT", `/api/v1/decision-flows/${id}`, { config: { nodes } });
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    assert.equal(edited.body.publishedVersion, 1, "editing the draft does not publish");
    const v2 = await call("POST", `/api/v1/decision-flows/${id}/publish`, { notes: "formula" });
    assert.equal(v2.body.publishedVersion, 2);
    const back = await call("POST", `/api/v1/decision-flows/${id}/rollback`, { toVersion: 1, notes: "oops" });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.equal(back.body.publishedVersion, 3);
    assert.equal(back.body.config.nodes[1].modelKey, "default-adaptive");
    assert.equal((await call("POST", `/api/v1/decision-flows/${id}/rollback`, { toVersion: 9 })).status, 400);
    assert.equal((await call("POST", `/api/v1/decision-flows/${id}/rollback`, { toVersion: 3 })).status, 400);

    const versions = await call("GET", `/api/v1/decision-flows/${id}/versions`);
    assert.deepEqual(versions.body.data.map((v: any) => [v.version, v.notes]), [[3, "oops"], [2, "formula"], [1, "first"]]);
    const feed = await call("GET", `/api/v1/change-history?entityId=${id}&action=rollback`, undefined, editor.apiKey);
    assert.equal(feed.body.changes[0].summary, `Rolled back decision flow "Versioned" from version 2 to 1 (new version 3)`);
    assert.deepEqual(
      { ...feed.body.changes[0].changes },
      { fromVersion: 2, toVersion: 1, newVersion: 3, notes: "oops" },
    );
    const published = await call("GET", `/api/v1/change-history?entityId=${id}&action=publish`);
    assert.equal(published.body.changes[0].summary, `Published decision flow "Versioned" version 2`);
    assert.equal((await call("POST", `/api/v1/decision-flows/${id}/publish`, {}, other.apiKey)).status, 404);
  });

  test("nodes must name existing models and profiles, and offers of the tenant", async () => {
    const unknownModel = await call("POST", "/api/v1/decision-flows", { name: "bad", key: "bad", config: { nodes: [{ type: "score", modelKey: "nope" }] } });
    assert.equal(unknownModel.status, 400);
    assert.match(unknownModel.body.detail, /config\.nodes\[0\]: unknown model key nope/);
    const theirOffer = await call("POST", "/api/v1/offers", { name: "theirs-2" }, other.apiKey);
    const foreign = await call("POST", "/api/v1/decision-flows", { name: "bad", key: "bad", offerIds: [theirOffer.body.id], autoAssemble: false });
    assert.equal(foreign.status, 400);
    assert.match(foreign.body.detail, /^offerIds\[0\]: unknown offer/);
    const badNode = await call("POST", "/api/v1/decision-flows", { name: "bad", key: "bad", config: { nodes: [{ type: "sort" }] } });
    assert.match(badNode.body.detail, /^config\.nodes\[0\]\.type: /);
  });
});

describe("offer fields the core reads", () => {
  test("eligibility, schedule and budget must have the core's shapes (400 naming the path)", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ eligibility: { attribute: "customer.age", op: "older_than", value: 3 } }, /^eligibility\.op: /],
      [{ schedule: { startAt: "tomorrow" } }, /^schedule\.startAt: must be an ISO 8601 timestamp/],
      [{ schedule: { daysOfWeek: [7] } }, /^schedule\.daysOfWeek: /],
      [{ budget: { maxImpressions: "ten", perDay: 100 } }, /^budget\.maxImpressions: /],
      [{ budget: { period: "fortnight" } }, /^budget\.period: /],
    ];
    for (const [fields, message] of cases) {
      const res = await call("POST", "/api/v1/offers", { name: `shaped-${Math.random()}`, ...fields });
      assert.equal(res.status, 400, JSON.stringify(fields));
      assert.match(res.body.detail, message);
    }
    const ok = await call("POST", "/api/v1/offers", {
      name: "well shaped",
      eligibility: { all: [{ attribute: "customer.age", op: "gte", value: 18 }] },
      schedule: { startAt: "2026-01-01T00:00:00Z", hours: { from: 8, to: 20 } },
      budget: { maxImpressions: 100, period: "day" },
    });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  test("eligibility: {rules: []} is no rules, rules are all (or with logic OR any) of their conditions, a malformed condition is a 400, a config in no known language is stored and decides nothing", async () => {
    const t = await svc.createTenant();
    const post = (path: string, body: unknown) => rest(svc.baseUrl, "POST", path, { key: t.apiKey, body });
    const open = await post("/api/v1/offers", { name: "no rules", status: "active", priority: 90, eligibility: { rules: [] } });
    assert.equal(open.status, 201, JSON.stringify(open.body));
    assert.deepEqual(open.body.eligibility, { rules: [] }, "stored as given");
    const gold = await post("/api/v1/offers", {
      name: "gold adults",
      status: "active",
      priority: 10,
      eligibility: { rules: [{ attribute: "customer.tier", op: "eq", value: "gold" }, { attribute: "customer.age", op: "gte", value: 18 }] },
    });
    assert.equal(gold.status, 201, JSON.stringify(gold.body));
    await rest(svc.baseUrl, "PUT", "/api/v1/customers/kim", { key: t.apiKey, body: { attributes: { tier: "gold", age: 40 } } });
    await rest(svc.baseUrl, "PUT", "/api/v1/customers/lou", { key: t.apiKey, body: { attributes: { tier: "gold", age: 12 } } });

    const kim = await post("/api/v1/recommend?explain=true", { customerId: "kim", limit: 10 });
    assert.equal(kim.status, 200, JSON.stringify(kim.body));
    assert.deepEqual(kim.body.offers.map((o: any) => o.offerId), [open.body.id, gold.body.id]);
    const lou = await post("/api/v1/recommend?explain=true", { customerId: "lou", limit: 10 });
    assert.deepEqual(lou.body.offers.map((o: any) => o.offerId), [open.body.id]);
    assert.equal(lou.body.rejectedOffers.find((r: any) => r.offerId === gold.body.id)?.stage, "eligibility", JSON.stringify(lou.body.rejectedOffers));

    const either = await post("/api/v1/offers", {
      name: "gold or adult",
      status: "active",
      priority: 5,
      eligibility: { logic: "OR", rules: [{ attribute: "customer.tier", op: "eq", value: "platinum" }, { attribute: "customer.age", op: "gte", value: 18 }] },
    });
    assert.equal(either.status, 201, JSON.stringify(either.body));
    const unread = await post("/api/v1/offers", { name: "own language", status: "active", priority: 1, eligibility: { minAge: 18 } });
    assert.equal(unread.status, 201, "spec 2.4 leaves the rule config open: stored as given");
    assert.deepEqual(unread.body.eligibility, { minAge: 18 });
    const kim2 = await post("/api/v1/recommend?explain=true", { customerId: "kim", limit: 10 });
    assert.deepEqual(kim2.body.offers.map((o: any) => o.offerId).sort(), [open.body.id, gold.body.id, either.body.id].sort(), "the unread eligibility decides nothing");
    const refusal = kim2.body.rejectedOffers.find((r: any) => r.offerId === unread.body.id);
    assert.equal(refusal?.stage, "eligibility", "listed, not vanished");
    assert.match(refusal.reason, /eligibility cannot be evaluated/);

    const refused: Array<[unknown, RegExp]> = [
      [{ attribute: "customer.age", op: "bogus", value: 1 }, /^eligibility\.op: /],
      [{ all: "gold" }, /^eligibility\.all: /],
    ];
    for (const [eligibility, message] of refused) {
      const created = await post("/api/v1/offers", { name: `refused-${Math.random()}`, status: "active", eligibility });
      assert.equal(created.status, 400, JSON.stringify(eligibility));
      assert.match(created.body.detail, message);
      const updated = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${open.body.id}`, { key: t.apiKey, body: { eligibility } });
      assert.equal(updated.status, 400, JSON.stringify(eligibility));
      assert.match(updated.body.detail, message);
    }
  });
});

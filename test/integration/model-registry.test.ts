import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, rest, rpcError } from "../support/clients.js";
import { ModelRegistryService } from "../../gen/decisioning/v1/models_pb.js";

/** Low, so that the tests can score a successor enough times through Recommend. */
const MIN_DECISIONS = 3;

let svc: TestService;
type Tenant = { tenantId: string; userId: string; apiKey: string };
let admin: Tenant;
let editor: { userId: string; apiKey: string };
let viewer: { userId: string; apiKey: string };
let other: Tenant;
let n = 0;
const unique = (base: string) => `${base}-${++n}`;

const call = (method: string, path: string, body?: unknown, key = admin.apiKey) =>
  rest(svc.baseUrl, method, path, { key, body: body ?? (method === "GET" ? undefined : {}) });

const promote = (id: string, body: Record<string, unknown>, key = admin.apiKey) => call("POST", `/api/v1/algorithm-models/${id}/promote`, body, key);

/** A logistic-regression model whose score rises with offer priority (`slope` > 0) or falls. */
async function model(tenant: Tenant, fields: Record<string, unknown> = {}, slope = 0.01) {
  const key = unique("model");
  const res = await call("POST", "/api/v1/algorithm-models", {
    name: key, key, type: "logistic_regression", config: { intercept: 0, coefficients: { "offer.priority": slope } }, ...fields,
  }, tenant.apiKey);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; key: string; name: string };
}

/** Moves a model along `path` (statuses, or [status, family]), asserting each move succeeds. */
async function walk(id: string, ...path: Array<string | [string, string]>) {
  for (const step of path) {
    const [toStatus, family] = Array.isArray(step) ? step : [step, undefined];
    const res = await promote(id, { toStatus, ...(family && { family }) });
    assert.equal(res.status, 200, `${toStatus}: ${JSON.stringify(res.body)}`);
  }
}

/** The model's change-history entries, newest first. */
const changes = async (id: string) => (await call("GET", `/api/v1/change-history?entityId=${id}&limit=100`)).body.changes as any[];

const statusOf = async (id: string) => (await call("GET", `/api/v1/algorithm-models/${id}`)).body.registryStatus as string;


/** An active flow whose score node names `modelKey`, over every active offer. */
async function flow(modelKey: string, shadowModelKeys: string[] = []) {
  const key = unique("flow");
  const res = await call("POST", "/api/v1/decision-flows", {
    name: key, key, status: "active", config: { nodes: [{ type: "candidates" }, { type: "score", modelKey, shadowModelKeys }, { type: "rank", count: 3 }] },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body as { id: string; key: string; name: string };
}

let dataKey: string;
const recommend = async (flowKey: string) => {
  const res = await rest(svc.baseUrl, "POST", "/api/v1/recommend?explain=true", { key: dataKey, body: { customerId: unique("c"), flow: flowKey } });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
};

before(async () => {
  svc = await startTestService({ modelPromotionMinDecisions: MIN_DECISIONS });
  admin = await svc.createTenant();
  editor = await svc.createUser(admin.tenantId, "editor");
  viewer = await svc.createUser(admin.tenantId, "viewer");
  other = await svc.createTenant("other");
  for (const priority of [10, 50, 90]) {
    assert.equal((await call("POST", "/api/v1/offers", { name: unique("offer"), status: "active", priority })).status, 201);
  }
  dataKey = (await call("POST", "/api/v1/api-keys", { name: "sdk" })).body.key;
});
after(() => svc.stop());

describe("registry moves (spec 3.3)", () => {
  test("every legal move succeeds with an audit entry carrying the snapshot; every illegal one is a 400 naming toStatus", async () => {
    const m = await model(admin);
    const legal: Record<string, string[]> = {
      draft: ["shadow", "challenger", "archived"],
      shadow: ["draft", "challenger", "champion", "archived"],
      challenger: ["draft", "shadow", "champion", "archived"],
      champion: ["shadow", "challenger", "archived"],
      archived: ["draft"],
    };
    // Covers each of the 15 legal moves at least once.
    const path = [
      "shadow", "challenger", "champion", "shadow", "champion", "challenger", "shadow", "draft", "challenger", "draft",
      "archived", "draft", "shadow", "archived", "draft", "challenger", "archived", "draft", "shadow", "champion", "archived",
    ];
    const covered = new Set<string>();
    let from = "draft";
    let version = 1;
    for (const [i, to] of path.entries()) {
      for (const illegal of Object.keys(legal).filter((s) => !legal[from].includes(s))) {
        const refused = await promote(m.id, { toStatus: illegal, family: "walk" });
        assert.equal(refused.status, 400, `${from}→${illegal}`);
        assert.match(refused.body.detail, new RegExp(`^toStatus: cannot move a ${from} model to ${illegal}`));
      }
      const snapshot = { step: i, uplift: 0.12, note: `to ${to}` };
      const res = await promote(m.id, { toStatus: to, family: "walk", metricsSnapshot: snapshot });
      assert.equal(res.status, 200, `${from}→${to}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.fromStatus, from);
      assert.equal(res.body.model.registryStatus, to);
      assert.equal(res.body.model.version, ++version, "each move is a new version, illegal ones none");
      assert.equal(res.body.demoted, null);
      assert.equal(await statusOf(m.id), to);
      // Tests run one at a time: the newest model entry is this move's.
      const [entry] = (await call("GET", "/api/v1/audit-logs?entityType=algorithm_model&limit=1")).body.logs;
      assert.equal(entry.entityId, m.id);
      assert.equal(entry.action, "update");
      assert.equal(entry.entityType, "algorithm_model");
      assert.deepEqual(entry.changes.registryMove, { from, to });
      assert.deepEqual(entry.changes.metricsSnapshot, snapshot);
      assert.equal(entry.before.registryStatus, from);
      assert.equal(entry.after.registryStatus, to);
      assert.equal(entry.entityVersion, version);
      assert.equal(entry.userId, admin.userId);
      covered.add(`${from}→${to}`);
      from = to;
    }
    assert.equal(covered.size, 15);
    const history = (await changes(m.id)).filter((e: any) => e.changes.registryMove);
    assert.equal(history.length, path.length, "illegal moves wrote nothing");
    assert.match(history[0].summary, /^Updated algorithm model ".*": .*registryStatus/);
  });

  test("bad input: a clear 400 naming the field, and nothing written", async () => {
    const m = await model(admin);
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{}, /^toStatus: is required/],
      [{ toStatus: "gold" }, /^toStatus: must be one of draft, shadow, challenger, champion, archived, got "gold"/],
      [{ toStatus: 5 }, /^toStatus: /],
      [{ toStatus: "shadow", family: "  " }, /^family: must be 1 to 255 characters/],
      [{ toStatus: "shadow", family: "x".repeat(256) }, /^family: must be 1 to 255 characters/],
      [{ toStatus: "shadow", family: "f", metricsSnapshot: [1, 2] }, /^metricsSnapshot: /],
      [{ toStatus: "shadow", family: "f", bypassRollbackGuard: "yes" }, /^bypassRollbackGuard: /],
    ];
    for (const [body, detail] of cases) {
      const res = await promote(m.id, body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.match(res.body.detail, detail, JSON.stringify(body));
    }
    const after = (await call("GET", `/api/v1/algorithm-models/${m.id}`)).body;
    assert.deepEqual([after.registryStatus, after.family, after.version], ["draft", "", 1]);
  });

  test("tenancy and roles: another tenant's model is 404 and unchanged; viewers may not move; editors may not bypass", async () => {
    const theirs = await model(other);
    const foreign = await promote(theirs.id, { toStatus: "shadow", family: "f" });
    assert.equal(foreign.status, 404);
    assert.equal((await call("GET", `/api/v1/algorithm-models/${theirs.id}`, undefined, other.apiKey)).body.registryStatus, "draft");
    assert.equal((await promote("00000000-0000-4000-8000-000000000000", { toStatus: "shadow", family: "f" })).status, 404);
    assert.equal((await promote("not-a-uuid", { toStatus: "shadow", family: "f" })).status, 404);

    const m = await model(admin);
    assert.equal((await promote(m.id, { toStatus: "shadow", family: "f" }, viewer.apiKey)).status, 403);
    const bypass = await promote(m.id, { toStatus: "shadow", family: "f", bypassRollbackGuard: true }, editor.apiKey);
    assert.equal(bypass.status, 403);
    assert.match(bypass.body.detail, /bypassRollbackGuard: only an admin/);
    assert.equal(await statusOf(m.id), "draft");
    assert.equal((await promote(m.id, { toStatus: "shadow", family: "f" }, editor.apiKey)).status, 200, "editors move models");
  });

  test("PUT ignores registryStatus; a model in a family role changes family only through promote", async () => {
    const m = await model(admin);
    await walk(m.id, ["challenger", "put-family"], "champion");
    const put = await call("PUT", `/api/v1/algorithm-models/${m.id}`, { description: "edited", registryStatus: "archived" });
    assert.equal(put.status, 200);
    assert.equal(put.body.registryStatus, "champion");
    assert.equal(put.body.description, "edited");
    const refamily = await call("PUT", `/api/v1/algorithm-models/${m.id}`, { family: "elsewhere" });
    assert.equal(refamily.status, 400);
    assert.match(refamily.body.detail, /^family: changes through POST \/api\/v1\/algorithm-models\/\{id\}\/promote while the model is champion/);
    const draft = await model(admin);
    const free = await call("PUT", `/api/v1/algorithm-models/${draft.id}`, { family: "anything" });
    assert.equal(free.status, 200, "a draft's family is its own business");
    assert.equal(free.body.family, "anything");
  });
});

describe("one champion per family", () => {
  test("promoting a champion demotes the old one to challenger in the same move; the database refuses a second", async () => {
    const [a, b] = [await model(admin), await model(admin)];
    await walk(a.id, ["challenger", "one"], "champion");
    await walk(b.id, ["challenger", "one"]);
    const res = await promote(b.id, { toStatus: "champion", bypassRollbackGuard: true, metricsSnapshot: { wins: 1 } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.demoted.id, a.id);
    assert.equal(res.body.demoted.registryStatus, "challenger");
    assert.deepEqual(res.body.bypassedGuards, ["UNPROVEN_SUCCESSOR"]);
    assert.equal(await statusOf(a.id), "challenger");
    const [demotion] = await changes(a.id);
    assert.deepEqual(demotion.changes.registryMove, { from: "champion", to: "challenger" });
    assert.equal(demotion.changes.reason, `replaced by champion ${b.key}`);
    const [promotion] = await changes(b.id);
    assert.deepEqual(promotion.changes.bypassedGuards, ["UNPROVEN_SUCCESSOR"]);

    // Enforced below the service too: a write that gets past it cannot make a second champion.
    await assert.rejects(
      svc.sql("UPDATE algorithm_models SET registry_status = 'champion' WHERE tenant_id = $1 AND id = $2", [admin.tenantId, a.id]),
      (err: any) => err.original?.constraint === "algorithm_models_one_champion",
    );
    // Families are per tenant: another tenant's champion of the same family name is no conflict.
    const theirs = await model(other);
    for (const toStatus of ["challenger", "champion"]) {
      assert.equal((await promote(theirs.id, { toStatus, family: "one" }, other.apiKey)).status, 200);
    }
  });
});

describe("rollback guard (docs/models.md)", () => {
  test("a successor needs scored decisions: a shadow is scored on its family's decisions until it has enough", async () => {
    const champion = await model(admin);
    await walk(champion.id, ["challenger", "proven"], "champion");
    const successor = await model(admin, {}, -0.01);
    await walk(successor.id, ["shadow", "proven"]);
    const f = await flow(champion.key);

    const early = await promote(successor.id, { toStatus: "champion" });
    assert.equal(early.status, 409);
    assert.equal(early.headers.get("x-error-reason"), "ROLLBACK_GUARD");
    assert.match(early.body.detail, new RegExp(`${successor.key} has scored 0 decisions, fewer than the ${MIN_DECISIONS} needed to replace champion ${champion.key}`));
    assert.equal(await statusOf(successor.id), "shadow");

    for (let i = 0; i < MIN_DECISIONS; i++) await recommend(f.key);
    const promoted = await promote(successor.id, { toStatus: "champion", metricsSnapshot: { decisions: MIN_DECISIONS } });
    assert.equal(promoted.status, 200, JSON.stringify(promoted.body));
    assert.deepEqual(promoted.body.bypassedGuards, []);
    assert.equal(promoted.body.demoted.id, champion.id);
  });

  test("the only champion of a family a live flow uses may not step down, nor may a model the flow names be archived, unless an admin bypasses", async () => {
    const champion = await model(admin);
    await walk(champion.id, ["challenger", "guarded"], "champion");
    const shadow = await model(admin);
    await walk(shadow.id, ["shadow", "guarded"]);
    const f = await flow(champion.key, [shadow.key]);

    const down = await promote(champion.id, { toStatus: "challenger" });
    assert.equal(down.status, 409);
    assert.deepEqual(down.body.rules, ["FAMILY_LEFT_WITHOUT_CHAMPION"]);
    assert.equal(down.headers.get("x-error-rules"), "FAMILY_LEFT_WITHOUT_CHAMPION");
    assert.match(down.body.detail, new RegExp(`only champion of family "guarded", which active flows score with \\(${f.name}\\)`));
    const archived = await promote(shadow.id, { toStatus: "archived" });
    assert.equal(archived.status, 409);
    assert.match(archived.body.detail, new RegExp(`active flows name ${shadow.key} in their score node`));
    assert.equal((await promote(champion.id, { toStatus: "archived", bypassRollbackGuard: true }, editor.apiKey)).status, 403);
    assert.equal(await statusOf(champion.id), "champion");

    const bypassed = await promote(champion.id, { toStatus: "archived", bypassRollbackGuard: true });
    assert.equal(bypassed.status, 200);
    assert.deepEqual(bypassed.body.bypassedGuards, ["FAMILY_LEFT_WITHOUT_CHAMPION", "MODEL_NAMED_BY_FLOW"]);
    // Once the flow stops being active, nothing guards the model it named.
    assert.equal((await call("PUT", `/api/v1/decision-flows/${f.id}`, { status: "paused" })).status, 200);
    await walk(shadow.id, "archived");
  });
});

describe("serving and shadow scoring through Recommend", () => {
  test("flows score with their family's champion; only the serving family's shadows are scored, in the trace only; a move applies at once", async () => {
    const [v1, v2] = [await model(admin, {}, 0.01), await model(admin, {}, -0.01)];
    const [sameFamily, otherFamily] = [await model(admin, {}, -0.02), await model(admin, {}, 0.03)];
    await walk(v1.id, ["challenger", "serve"], "champion");
    await walk(v2.id, ["challenger", "serve"]);
    await walk(sameFamily.id, ["shadow", "serve"]);
    const otherChampion = await model(admin);
    await walk(otherChampion.id, ["challenger", "elsewhere"], "champion");
    await walk(otherFamily.id, ["shadow", "elsewhere"]);
    // The flow names the challenger: the family's champion serves.
    const f = await flow(v2.key);

    const first = await recommend(f.key);
    await svc.running.services.decisions.traces.flush();
    const trace = (await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${first.recommendationId}`, { key: admin.apiKey })).body;
    assert.ok(trace.scoringResults.every((s: any) => s.modelId === v1.id), "the champion scored");
    for (const s of trace.scoringResults) assert.deepEqual(Object.keys(s.shadowScores), [sameFamily.key], "only the serving family's shadow");
    const [row] = await svc.sql("SELECT scored_by FROM recommendations WHERE tenant_id = $1 AND id = $2", [admin.tenantId, first.recommendationId]);
    assert.deepEqual(row.scored_by, [v1.id, sameFamily.id]);

    // The shadow ranks the other way round, yet the served order follows the champion.
    const served = first.offers.map((o: any) => o.offerId);
    const byShadow = [...trace.scoringResults].sort((a: any, b: any) => b.shadowScores[sameFamily.key] - a.shadowScores[sameFamily.key]).map((s: any) => s.offerId);
    assert.deepEqual(served, trace.scoringResults.map((s: any) => s.offerId));
    assert.deepEqual(byShadow, [...served].reverse());

    // Promote v2 (bypassing the decision count): the very next decision scores with it.
    assert.equal((await promote(v2.id, { toStatus: "champion", bypassRollbackGuard: true })).status, 200);
    const second = await recommend(f.key);
    await svc.running.services.decisions.traces.flush();
    const after = (await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${second.recommendationId}`, { key: admin.apiKey })).body;
    assert.ok(after.scoringResults.every((s: any) => s.modelId === v2.id), "the new champion serves without editing the flow");
    assert.deepEqual(second.offers.map((o: any) => o.offerId), [...served].reverse());
  });
});

describe("families are optional (spec 4.12): the default family", () => {
  test("a model promoted without a family joins the default family: its shadow is scored beside family-less models, its champion serves flows naming them, resolve-lifecycle shows it at the top", async () => {
    const t = await svc.createTenant();
    for (const priority of [10, 90]) assert.equal((await call("POST", "/api/v1/offers", { name: unique("offer"), status: "active", priority }, t.apiKey)).status, 201);
    const sdk = (await call("POST", "/api/v1/api-keys", { name: "sdk" }, t.apiKey)).body.key;
    const [named, shadow, successor] = [await model(t, {}, 0.01), await model(t, {}, -0.01), await model(t, {}, -0.02)];
    const toShadow = await promote(shadow.id, { toStatus: "shadow" }, t.apiKey);
    assert.equal(toShadow.status, 200, JSON.stringify(toShadow.body));
    assert.equal(toShadow.body.model.family, "default");
    const flowKey = unique("flow");
    const created = await call("POST", "/api/v1/decision-flows", {
      name: flowKey, key: flowKey, status: "active", config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: named.key }, { type: "rank", count: 2 }] },
    }, t.apiKey);
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const decide = async () => {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: sdk, body: { customerId: unique("c"), flow: flowKey } });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      await svc.running.services.decisions.traces.flush();
      return (await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${res.body.recommendationId}`, { key: t.apiKey })).body;
    };
    const first = await decide();
    assert.ok(first.scoringResults.every((r: any) => r.modelId === named.id), "the family-less model the flow names serves");
    for (const r of first.scoringResults) assert.deepEqual(Object.keys(r.shadowScores ?? {}), [shadow.key], "the default family's shadow is scored beside it");

    for (const toStatus of ["challenger", "champion"]) assert.equal((await promote(successor.id, { toStatus }, t.apiKey)).status, 200, toStatus);
    const second = await decide();
    assert.ok(second.scoringResults.every((r: any) => r.modelId === successor.id), "the default family's champion serves flows naming family-less models");

    const lineup = (await rest(svc.baseUrl, "GET", "/api/v1/algorithm-models/resolve-lifecycle", { key: t.apiKey })).body;
    assert.deepEqual(lineup.families.map((f: any) => f.family), ["default"]);
    assert.equal(lineup.champion.id, successor.id);
    assert.deepEqual(lineup.challengers, []);
    assert.deepEqual(lineup.shadowModels.map((m: any) => m.id), [shadow.id]);
  });
});

describe("GET /api/v1/algorithm-models/resolve-lifecycle", () => {
  test("champion, challengers and shadow models per family; the literal path wins over {id}; tenants never mix", async () => {
    const t = await svc.createTenant();
    const mk = async (family: string, ...path: string[]) => {
      const m = await model(t);
      for (const [i, toStatus] of path.entries()) {
        const res = await promote(m.id, { toStatus, ...(i === 0 && { family }) }, t.apiKey);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      }
      return m;
    };
    const champ = await mk("alpha", "challenger", "champion");
    const chall = await mk("alpha", "challenger");
    const shad = await mk("alpha", "shadow");
    const beta = await mk("beta", "shadow");
    await mk("alpha", "shadow", "draft");
    await mk("alpha", "archived");

    const res = await rest(svc.baseUrl, "GET", "/api/v1/algorithm-models/resolve-lifecycle", { key: t.apiKey });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const ids = (list: any[]) => list.map((e) => e.id);
    assert.deepEqual(res.body.families.map((f: any) => f.family), ["alpha", "beta"]);
    const [alpha, betaFamily] = res.body.families;
    assert.equal(alpha.champion.id, champ.id);
    assert.deepEqual(Object.keys(alpha.champion).sort(), ["family", "id", "key", "name", "registryStatus", "type", "updatedAt", "version"]);
    assert.deepEqual(ids(alpha.challengers), [chall.id]);
    assert.deepEqual(ids(alpha.shadowModels), [shad.id]);
    assert.equal(betaFamily.champion, null);
    assert.deepEqual(ids(betaFamily.shadowModels), [beta.id]);
    assert.equal(res.body.champion, null, "two named families and no default one: no single lineup of the tenant");
    assert.deepEqual(res.body.shadowModels, []);

    const put = await rest(svc.baseUrl, "PUT", "/api/v1/algorithm-models/resolve-lifecycle", { key: t.apiKey, body: { name: "x" } });
    assert.equal(put.status, 405, "the literal path is never read as a model id");
    const filtered = await rest(svc.baseUrl, "GET", "/api/v1/algorithm-models/resolve-lifecycle?family=beta", { key: t.apiKey });
    assert.deepEqual(filtered.body.families.map((f: any) => f.family), ["beta"]);
    assert.deepEqual(ids(filtered.body.shadowModels), [beta.id], "one family: it is the tenant's lineup");
    const viewerKey = (await svc.createUser(t.tenantId, "viewer")).apiKey;
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/algorithm-models/resolve-lifecycle", { key: viewerKey })).status, 200);
    const otherTenant = await rest(svc.baseUrl, "GET", "/api/v1/algorithm-models/resolve-lifecycle?family=alpha", { key: other.apiKey });
    assert.deepEqual(otherTenant.body.families, []);

    // The same answer through Connect, and the same refusal of a bad promote.
    const client = connectClient(ModelRegistryService, svc.baseUrl);
    const headers = { "x-api-key": t.apiKey };
    const viaConnect = await client.resolveModelLifecycle({}, { headers });
    assert.equal(viaConnect.families[0].champion?.id, champ.id);
    const refused = await rpcError(client.promoteAlgorithmModel({ id: champ.id, toStatus: "gold" }, { headers }));
    assert.equal(refused.reason, "VALIDATION_FAILED");
    assert.match(refused.message, /^toStatus: must be one of/);
  });
});

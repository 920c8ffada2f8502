import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { randomUUID } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError } from "../support/clients.js";
import { TREES } from "../support/shap-trees.js";
import { DecisionExplanationService } from "../../gen/decisioning/v1/explanations_pb.js";
import { createLogger } from "../../src/platform/logger.js";
import { createScoringPool } from "../../src/platform/scoring-pool.js";
import { chooseScoringPath, explainScoreTask, NO_EVIDENCE, type ScoreTask } from "../../src/core/index.js";
import { SHAP_POOL_MIN_TREE_WALKS } from "../../src/explanations/shap-service.js";

/**
 * Spec 4.11 end to end: SHAP values and narratives of recorded decisions, behind the tenant
 * opt-in, per tenant, rate-limited and audited; the narrative cache; both writers, the LLM one
 * against a real local HTTP server speaking chat-completions (nothing leaves the machine).
 */
const LLM_KEY = "sk-test-llm-key-0123456789";
const SECRET_ATTRIBUTE = "123-45-6789";

let svc: TestService;
let llmSvc: TestService;
let llm: FakeLlm;
const llmLog: string[] = [];

type Tenant = { tenantId: string; userId: string; apiKey: string };
let n = 0;
const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;

/** A chat-completions endpoint on loopback that records each request and answers canned text (or fails on demand). */
interface FakeLlm {
  server: Server;
  url: string;
  requests: Array<{ path: string; authorization: string | undefined; body: any }>;
  failNext: number;
}

async function startFakeLlm(): Promise<FakeLlm> {
  const fake: FakeLlm = { server: null as unknown as Server, url: "", requests: [], failNext: 0 };
  fake.server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    fake.requests.push({ path: req.url ?? "", authorization: req.headers.authorization, body });
    if (fake.failNext > 0) {
      fake.failNext--;
      res.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: `echo ${req.headers.authorization}` } }));
      return;
    }
    const mode = body.messages[0].content.includes("regulator") ? "regulator" : "other";
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        id: "chatcmpl-1",
        object: "chat.completion",
        model: body.model,
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: `Canned narrative (${mode}).` } }],
      }),
    );
  });
  fake.server.listen(0, "127.0.0.1");
  await new Promise((resolve) => fake.server.once("listening", resolve));
  fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}/v1`;
  return fake;
}

before(async () => {
  llm = await startFakeLlm();
  svc = await startTestService();
  // A second process on the same database, configured with the LLM writer; its log is kept to check the key never reaches it.
  llmSvc = await startTestService(
    { llm: { baseUrl: llm.url, model: "test-model", apiKey: LLM_KEY } },
    svc.config.databaseUrl!,
    createLogger("debug", { write: (line: string) => void llmLog.push(line) }),
  );
});
after(async () => {
  await llmSvc?.stop();
  await svc?.stop();
  llm?.server.close();
});

async function call(method: string, path: string, body: unknown, key: string, base = svc.baseUrl) {
  return rest(base, method, path, { key, body });
}

async function create(path: string, body: Record<string, unknown>, t: Tenant) {
  const res = await call("POST", `/api/v1/${path}`, body, t.apiKey);
  assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
  return res.body;
}

async function optIn(t: Tenant, enabled = true) {
  const res = await call("PUT", "/api/v1/tenant-settings", { aiAnalyzerSettings: { llmExplanationsEnabled: enabled } }, t.apiKey);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.equal(res.body.aiAnalyzerSettings.llmExplanationsEnabled, enabled);
}

/**
 * A tenant whose flow scores two offers with a gradient-boosted model and returns one, a customer
 * with a sensitive attribute no explanation may send out, and one traced decision.
 */
async function gbtDecision(options: { optIn?: boolean; modelType?: "gradient_boosted" | "logistic_regression" } = {}) {
  const t = await svc.createTenant();
  if (options.optIn !== false) await optIn(t);
  const high = await create("offers", { name: unique("Premium card"), status: "active", priority: 80 }, t);
  const low = await create("offers", { name: unique("Starter card"), status: "active", priority: 20 }, t);
  const model = await create("algorithm-models", options.modelType === "logistic_regression"
    ? { name: "LR", key: "scorer", type: "logistic_regression", config: { intercept: -1, coefficients: { "customer.age": 0.02 } } }
    : { name: "GBT", key: "scorer", type: "gradient_boosted", config: { trees: TREES, featureMap: { age: "customer.age" }, baseScore: 0.4 } }, t);
  await create("decision-flows", {
    name: "scored", key: "scored", status: "active", autoAssemble: false,
    config: { nodes: [{ type: "candidates", offerIds: [high.id, low.id] }, { type: "score", modelKey: "scorer" }, { type: "rank", count: 1 }] },
  }, t);
  const customerId = unique("customer");
  assert.equal((await call("PUT", `/api/v1/customers/${customerId}`, { attributes: { age: 45, ssn: SECRET_ATTRIBUTE } }, t.apiKey)).status, 200);
  const data = await create("api-keys", { name: unique("sdk") }, t);
  const decision = await call("POST", "/api/v1/recommend", { customerId, flow: "scored" }, data.key);
  assert.equal(decision.status, 200, JSON.stringify(decision.body));
  await svc.running.services.decisions.traces.flush();
  return { t, high, low, model, customerId, recommendationId: decision.body.recommendationId as string, decision: decision.body };
}

const sigmoid = (m: number) => 1 / (1 + Math.exp(-m));
const logit = (p: number) => Math.log(p / (1 - p));

async function auditEntries(t: Tenant) {
  const res = await call("GET", "/api/v1/audit-logs?entityType=decision_trace&limit=100", undefined, t.apiKey);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.logs as Array<Record<string, any>>;
}

describe("POST /api/v1/decisions/{id}/shap", () => {
  test("exact contributions per candidate in raw-margin space, additive, audited; the same on every door", async () => {
    const { t, high, low, recommendationId } = await gbtDecision();
    const viewer = await svc.createUser(t.tenantId, "viewer");
    const res = await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, viewer.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const body = res.body;
    assert.equal(body.recommendationId, recommendationId);
    assert.equal(body.modelType, "gradient_boosted");
    assert.equal(body.modelKey, "scorer");
    assert.equal(body.algorithm, "tree_shap_path_dependent");
    assert.equal(body.outputSpace, "raw_margin");
    assert.equal(body.coverSource, "node_cover");
    // E[margin] by cover: logit(0.4) + (0.4·−0.5 + 0.6·(0.75·0.2 + 0.25·0.9)) + (0.3·(2/3·0.1 + 1/3·−0.3) + 0.7·0.05).
    const base = logit(0.4) + (0.4 * -0.5 + 0.6 * (0.75 * 0.2 + 0.25 * 0.9)) + (0.3 * ((2 / 3) * 0.1 + (1 / 3) * -0.3) + 0.7 * 0.05);
    assert.ok(Math.abs(body.baseValue - base) < 1e-12, `${body.baseValue} vs ${base}`);
    assert.deepEqual(body.candidates.map((c: any) => c.offerId), [high.id, low.id]);
    const [first, second] = body.candidates;
    assert.equal(first.offerName, high.name);
    // Age 45 ≥ 30; priority 80 ≥ 60 → 0.9 and ≥ 40 → 0.05; priority 20 → 0.2 and < 40, age < 50 → 0.1.
    assert.ok(Math.abs(first.margin - (logit(0.4) + 0.9 + 0.05)) < 1e-12);
    assert.ok(Math.abs(second.margin - (logit(0.4) + 0.2 + 0.1)) < 1e-12);
    assert.ok(Math.abs(first.score - sigmoid(first.margin)) < 1e-15);
    for (const c of body.candidates) {
      const sum = c.contributions.reduce((s: number, f: any) => s + f.contribution, 0);
      assert.ok(Math.abs(body.baseValue + sum - c.margin) < 1e-9, `additivity for ${c.offerId}`);
      assert.ok(c.additivityResidual < 1e-9);
      assert.deepEqual(c.contributions.map((f: any) => [f.feature, f.attribute]).sort(), [["age", "customer.age"], ["offer.priority", "offer.priority"]]);
    }
    assert.ok(body.additivityResidual < 1e-9);
    assert.equal(first.contributions.find((f: any) => f.feature === "age").value, 45);
    assert.equal(second.contributions.find((f: any) => f.feature === "offer.priority").value, 20);

    const audited = (await auditEntries(t)).filter((e) => e.action === "explain");
    assert.equal(audited.length, 1);
    assert.equal(audited[0].entityId, body.traceId);
    assert.equal(audited[0].userId, viewer.userId);
    assert.equal(audited[0].changes.explanation, "shap");
    assert.equal(audited[0].changes.candidates, 2);
    assert.equal((await call("GET", "/api/v1/audit-logs/verify", undefined, t.apiKey)).body.intact, true, "the chain verifies with the new entries");

    const headers = { headers: { "x-api-key": viewer.apiKey } };
    const viaGrpc = await grpcClient(DecisionExplanationService, svc.grpcAddress).explainDecisionShap({ id: recommendationId }, headers);
    const viaConnect = await connectClient(DecisionExplanationService, svc.baseUrl).explainDecisionShap({ id: body.traceId }, headers);
    for (const other of [viaGrpc, viaConnect]) {
      assert.equal(other.baseValue, body.baseValue);
      assert.deepEqual(other.candidates.map((c) => c.contributions.map((f) => f.contribution)), body.candidates.map((c: any) => c.contributions.map((f: any) => f.contribution)));
    }
  });

  test("a decision made before the model changed is explained by the model it used (the trace's replay record)", async () => {
    const { t, model, recommendationId } = await gbtDecision();
    const before = await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey);
    assert.equal(before.status, 200);
    const changed = await call("PUT", `/api/v1/algorithm-models/${model.id}`, { config: { trees: [{ nodeid: 0, leaf: 3 }], baseScore: 0.5 } }, t.apiKey);
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    const after = await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey);
    assert.equal(after.status, 200);
    assert.deepEqual(after.body, before.body);
  });

  test("400 when the decision's model is not gradient-boosted, naming the reason; nothing audited", async () => {
    const { t, recommendationId } = await gbtDecision({ modelType: "logistic_regression" });
    const res = await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey);
    assert.equal(res.status, 400);
    assert.equal(res.body.reason, "MODEL_NOT_GRADIENT_BOOSTED");
    assert.match(res.body.detail, /logistic_regression/);
    assert.deepEqual((await auditEntries(t)).filter((e) => e.action === "explain"), []);
  });

  test("a large task is explained in the worker pool, with the inline path's exact values", async () => {
    const stumps = Array.from({ length: 400 }, (_, i) => ({
      nodeid: 0, split: i % 2 ? "age" : "offer.priority", split_condition: 10 + (i % 70), yes: 1, no: 2, missing: 1, cover: 10,
      children: [{ nodeid: 1, leaf: ((i % 7) - 3) / 100, cover: 4 }, { nodeid: 2, leaf: ((i % 5) - 2) / 50, cover: 6 }],
    }));
    const task: ScoreTask = {
      candidates: Array.from({ length: 5 }, (_, i) => ({ id: `o${i}`, priority: i * 20, businessValue: 1 })),
      customer: { age: 37 }, context: {}, modelKey: "big", shadowModelKeys: [], evidence: NO_EVIDENCE, clv: null, seed: "s", explain: false,
      models: { big: { id: "big", key: "big", type: "gradient_boosted", trees: stumps, featureMap: { age: "customer.age" } } },
    };
    assert.equal(chooseScoringPath(task, SHAP_POOL_MIN_TREE_WALKS), "pool");
    const pool = createScoringPool(createLogger("silent"), { threads: 1 });
    try {
      const viaPool = await pool.explainShap(task);
      assert.deepEqual(viaPool, explainScoreTask(task));
      assert.ok(viaPool.shap!.additivityResidual < 1e-9);
    } finally {
      await pool.close();
    }
  });
});

describe("the opt-in, tenancy and rate limits of both routes", () => {
  test("403 without aiAnalyzerSettings.llmExplanationsEnabled, on every door; off by default", async () => {
    const { t, recommendationId } = await gbtDecision({ optIn: false });
    const settings = await call("GET", "/api/v1/tenant-settings", undefined, t.apiKey);
    assert.deepEqual(settings.body.aiAnalyzerSettings, { llmExplanationsEnabled: false });
    for (const route of ["shap", "narrative"]) {
      const res = await call("POST", `/api/v1/decisions/${recommendationId}/${route}`, {}, t.apiKey);
      assert.equal(res.status, 403, route);
      assert.equal(res.body.reason, "EXPLANATIONS_NOT_ENABLED");
      assert.match(res.body.detail, /aiAnalyzerSettings\.llmExplanationsEnabled/);
    }
    const headers = { headers: { "x-api-key": t.apiKey } };
    for (const client of [grpcClient(DecisionExplanationService, svc.grpcAddress), connectClient(DecisionExplanationService, svc.baseUrl)]) {
      const shap = await rpcError(client.explainDecisionShap({ id: recommendationId }, headers));
      const narrative = await rpcError(client.narrateDecision({ id: recommendationId }, headers));
      for (const err of [shap, narrative]) assert.deepEqual([err.code, err.reason], [Code.PermissionDenied, "EXPLANATIONS_NOT_ENABLED"]);
    }
    await optIn(t);
    assert.equal((await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey)).status, 200);
    await optIn(t, false);
    assert.equal((await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey)).status, 403);
  });

  test("404 for another tenant's trace and for ids that are no trace", async () => {
    const { recommendationId } = await gbtDecision();
    const other = await svc.createTenant();
    await optIn(other);
    for (const route of ["shap", "narrative"]) {
      for (const id of [recommendationId, randomUUID(), "not-a-trace"]) {
        const res = await call("POST", `/api/v1/decisions/${id}/${route}`, {}, other.apiKey);
        assert.equal(res.status, 404, `${route} ${id}`);
      }
    }
    const err = await rpcError(grpcClient(DecisionExplanationService, svc.grpcAddress).narrateDecision({ id: recommendationId }, { headers: { "x-api-key": other.apiKey } }));
    assert.equal(err.code, Code.NotFound);
  });

  test("shap: 30 per minute per tenant across the doors, then 429 with Retry-After; another tenant is unaffected", async () => {
    const { t, recommendationId } = await gbtDecision();
    const { t: neighbour, recommendationId: theirs } = await gbtDecision();
    const headers = { headers: { "x-api-key": t.apiKey } };
    const grpc = grpcClient(DecisionExplanationService, svc.grpcAddress);
    await grpc.explainDecisionShap({ id: recommendationId }, headers);
    await connectClient(DecisionExplanationService, svc.baseUrl).explainDecisionShap({ id: recommendationId }, headers);
    const statuses = await Promise.all(Array.from({ length: 28 }, () => call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey).then((r) => r.status)));
    assert.deepEqual([...new Set(statuses)], [200]);
    const limited = await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, "Too Many Requests");
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
    assert.equal(limited.headers.get("x-ratelimit-limit"), "30");
    assert.equal((await rpcError(grpc.explainDecisionShap({ id: recommendationId }, headers))).code, Code.ResourceExhausted);
    assert.equal((await call("POST", `/api/v1/decisions/${theirs}/shap`, {}, neighbour.apiKey)).status, 200);
  });

  test("narrative: 20 per minute per tenant, then 429; the limit is the narrative route's own", async () => {
    const { t, recommendationId } = await gbtDecision();
    const statuses = await Promise.all(Array.from({ length: 20 }, () => call("POST", `/api/v1/decisions/${recommendationId}/narrative`, {}, t.apiKey).then((r) => r.status)));
    assert.deepEqual([...new Set(statuses)], [200]);
    const limited = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "customer" }, t.apiKey);
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get("x-ratelimit-limit"), "20");
    const err = await rpcError(connectClient(DecisionExplanationService, svc.baseUrl).narrateDecision({ id: recommendationId }, { headers: { "x-api-key": t.apiKey } }));
    assert.equal(err.code, Code.ResourceExhausted);
    assert.equal((await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey)).status, 200);
  });
});

describe("POST /api/v1/decisions/{id}/narrative", () => {
  test("the deterministic writer, labelled; cached 7 days per mode, noCache writes afresh; regulator mode is audited", async () => {
    const { t, high, recommendationId } = await gbtDecision();
    const first = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, {}, t.apiKey);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const b = first.body;
    assert.equal(b.mode, "marketer");
    assert.deepEqual([b.writer.kind, b.writer.model, b.writer.fallbackReason], ["deterministic", "deterministic-v1", null]);
    assert.match(b.writer.label, /without a language model/);
    assert.equal(b.cached, false);
    assert.ok(b.narrative.includes(high.name), b.narrative);
    assert.match(b.narrative, /2 offers were scored/);
    const days = (Date.parse(b.expiresAt) - Date.parse(b.generatedAt)) / 86_400_000;
    assert.equal(days, 7);
    assert.equal(b.facts.selectedOffers[0].offerId, high.id);
    assert.deepEqual(b.facts.factorValues, { age: 45 }, "only the attribute values behind the top factors");
    assert.ok(!JSON.stringify(b).includes(SECRET_ATTRIBUTE), "attributes that are no top factor stay out of the facts");

    const again = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "marketer" }, t.apiKey);
    assert.equal(again.body.cached, true);
    assert.equal(again.body.narrative, b.narrative);
    assert.equal(again.body.generatedAt, b.generatedAt);
    const fresh = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { noCache: true }, t.apiKey);
    assert.equal(fresh.body.cached, false);
    assert.notEqual(fresh.body.generatedAt, b.generatedAt);
    assert.equal((await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, {}, t.apiKey)).body.generatedAt, fresh.body.generatedAt, "noCache replaced the cached text");

    const customer = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "customer" }, t.apiKey);
    assert.equal(customer.body.cached, false, "each mode has its own entry");
    assert.match(customer.body.narrative, /^We recommended .+ was chosen mainly because of the offer's priority and your age\./);
    assert.deepEqual((await auditEntries(t)).filter((e) => e.action === "explain"), [], "only regulator narratives are audited");

    const regulator = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "regulator" }, t.apiKey);
    assert.equal(regulator.status, 200);
    assert.match(regulator.body.narrative, new RegExp(`inputs hash ${regulator.body.inputsHash}`));
    const cachedRegulator = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "regulator" }, t.apiKey);
    assert.equal(cachedRegulator.body.cached, true);
    const audited = (await auditEntries(t)).filter((e) => e.action === "explain");
    assert.equal(audited.length, 2, "every regulator answer, cached or not");
    assert.deepEqual(audited.map((e) => [e.changes.explanation, e.changes.mode, e.changes.cached]), [["narrative", "regulator", true], ["narrative", "regulator", false]]);
    assert.ok(!JSON.stringify(audited).includes(regulator.body.narrative.slice(0, 40)), "the text itself stays out of the unerasable chain");
    assert.equal((await call("GET", "/api/v1/audit-logs/verify", undefined, t.apiKey)).body.intact, true);

    const bad = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "poet" }, t.apiKey);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.detail, "mode: must be one of customer, marketer, regulator");

    const reset = await call("POST", "/api/v1/workspace/reset", { confirm: t.tenantId }, t.apiKey);
    assert.equal(reset.status, 200);
    const [rows] = await svc.running.foundation.db.query("SELECT count(*)::int AS n FROM decision_narratives WHERE tenant_id = $1", { bind: [t.tenantId] });
    assert.equal((rows as Array<{ n: number }>)[0].n, 0, "a workspace reset takes the cached narratives with the traces");
  });

  test("the LLM writer gets only the trace's facts, the model and the bearer key, and its answer is labelled and cached", async () => {
    const { t, customerId, recommendationId } = await gbtDecision();
    llm.requests.length = 0;
    const res = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "regulator" }, t.apiKey, llmSvc.baseUrl);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.narrative, "Canned narrative (regulator).");
    assert.deepEqual([res.body.writer.kind, res.body.writer.model], ["llm", "test-model"]);
    assert.match(res.body.writer.label, /test-model/);
    assert.equal(llm.requests.length, 1);
    const [sent] = llm.requests;
    assert.equal(sent.path, "/v1/chat/completions");
    assert.equal(sent.authorization, `Bearer ${LLM_KEY}`);
    assert.equal(sent.body.model, "test-model");
    assert.deepEqual(sent.body.messages.map((m: any) => m.role), ["system", "user"]);
    assert.match(sent.body.messages[0].content, /regulator/);
    assert.deepEqual(JSON.parse(sent.body.messages[1].content), res.body.facts, "the model sees exactly the facts the response shows");
    const wire = JSON.stringify(sent.body);
    assert.ok(!wire.includes(SECRET_ATTRIBUTE) && !wire.includes(customerId), "no customer id, no attribute beyond the facts");
    assert.ok(!JSON.stringify(res.body).includes(LLM_KEY));

    const cached = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "regulator" }, t.apiKey, llmSvc.baseUrl);
    assert.deepEqual([cached.body.cached, cached.body.writer.kind, llm.requests.length], [true, "llm", 1]);
    // The deterministic process shares the database, but its writer is another model: its own entry.
    const deterministic = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "regulator" }, t.apiKey);
    assert.deepEqual([deterministic.body.cached, deterministic.body.writer.kind], [false, "deterministic"]);
    const audited = (await auditEntries(t)).filter((e) => e.action === "explain");
    assert.deepEqual(audited.map((e) => e.changes.writer), ["deterministic", "llm", "llm"]);
  });

  test("a failing LLM: the deterministic writer answers and says why, nothing is cached, and the key is never logged", async () => {
    const { t, recommendationId } = await gbtDecision();
    llm.failNext = 1;
    const res = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "marketer" }, t.apiKey, llmSvc.baseUrl);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.writer.kind, "deterministic");
    assert.equal(res.body.writer.fallbackReason, "the LLM endpoint answered HTTP 500");
    assert.equal(res.body.expiresAt, null);
    assert.ok(!JSON.stringify(res.body).includes(LLM_KEY), "the endpoint's error body (which echoes the key) is not passed on");
    const retried = await call("POST", `/api/v1/decisions/${recommendationId}/narrative`, { mode: "marketer" }, t.apiKey, llmSvc.baseUrl);
    assert.deepEqual([retried.body.writer.kind, retried.body.cached], ["llm", false]);
    assert.ok(llmLog.some((line) => line.includes("LLM narrative failed")), "the failure is logged");
    assert.ok(!llmLog.join("").includes(LLM_KEY));
  });

  test("a trace stored before replay records still gets a narrative; SHAP says it has no model version", async () => {
    const t = await svc.createTenant();
    await optIn(t);
    const [traceId, recommendationId, offerId, refusedId] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const stored = {
      scoringResults: [{ offerId, score: 0.62, modelId: "gbt-old", modelType: "gradient_boosted", explanations: [{ field: "tier=gold", contribution: 0.3 }] }],
      selectedOffers: [{ offerId, name: "Gold card", score: 0.62, rank: 1 }],
      qualificationResults: [{ offerId, qualified: true }, { offerId: refusedId, qualified: false, reason: "eligibility" }],
      contactPolicyResults: [{ offerId, allowed: true }],
      rejectedOffers: [{ offerId: refusedId, stage: "eligibility", reason: "Gold tier only" }],
      rankingWeights: { score: 1 },
      inputs: { customerId: "c-old", customer: { tier: "gold", ssn: SECRET_ATTRIBUTE }, context: {}, now: "2026-01-01T00:00:00.000Z" },
    };
    await svc.running.foundation.db.query(
      `INSERT INTO decision_traces (tenant_id, id, recommendation_id, customer_id, flow_id, degraded_scoring, selected_count,
         rejected_count, trace, inputs_hash, policy_version_hash, created_at)
       VALUES ($1, $2, $3, 'c-old', NULL, false, 1, 1, $4, 'inputs-hash-old', 'policy-hash-old', '2026-01-01T00:00:00Z')`,
      { bind: [t.tenantId, traceId, recommendationId, gzipSync(JSON.stringify(stored))] },
    );
    const res = await call("POST", `/api/v1/decisions/${traceId}/narrative`, { mode: "regulator" }, t.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.narrative, /Selected at rank 1: Gold card/);
    assert.match(res.body.narrative, /Rejected at stage eligibility: 1 \(offer: Gold tier only\)/);
    assert.match(res.body.narrative, /tier = gold/);
    assert.deepEqual(res.body.facts.stages.eligibility, { evaluated: 2, passed: 1, failed: 1, skipped: 0 });
    assert.ok(!JSON.stringify(res.body).includes(SECRET_ATTRIBUTE));
    const shap = await call("POST", `/api/v1/decisions/${recommendationId}/shap`, {}, t.apiKey);
    assert.equal(shap.status, 400);
    assert.equal(shap.body.reason, "TRACE_NOT_REPLAYABLE");
  });
});

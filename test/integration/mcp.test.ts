import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { tenantKey } from "../../src/platform/redis.js";

const QUOTA = 3;
let svc: TestService;
let tenant: { tenantId: string; userId: string; apiKey: string };
const clients: Client[] = [];

const unique = (p: string) => `${p}-${randomBytes(4).toString("hex")}`;

/** The SDK's own client over Streamable HTTP, authenticating with an API key header. */
async function connect(key: string): Promise<Client> {
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/api/v1/mcp`), { requestInit: { headers: { "x-api-key": key } } });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** A tool's result: its JSON when it succeeded, its message when it is a tool error. */
async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; json?: any; text: string }> {
  const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text: string }> };
  const text = result.content.map((c) => c.text).join("");
  if (result.isError) return { isError: true, text };
  return { isError: false, json: JSON.parse(text), text };
}

async function rowCounts(tenantId: string) {
  const [row] = await svc.sql(
    `SELECT (SELECT count(*) FROM recommendations WHERE tenant_id = $1)::int AS recommendations,
            (SELECT count(*) FROM interactions WHERE tenant_id = $1)::int AS interactions,
            (SELECT count(*) FROM decision_traces WHERE tenant_id = $1)::int AS traces`,
    [tenantId],
  );
  return row;
}

before(async () => {
  svc = await startTestService({ decisionQuota: QUOTA });
  tenant = await svc.createTenant();
});
after(async () => {
  for (const c of clients) await c.close();
  await svc.stop();
});

describe("MCP endpoint (spec 5.2) through the SDK client", () => {
  test("lists the tools, each with an input schema", async () => {
    const client = await connect(tenant.apiKey);
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name).sort(),
      ["create_offer", "dry_run_recommend", "get_decision_trace", "get_experiment_results", "get_offer", "list_decision_traces", "list_offers"],
    );
    for (const t of tools) assert.equal(t.inputSchema.type, "object", t.name);
    const dryRun = tools.find((t) => t.name === "dry_run_recommend")!;
    assert.deepEqual(dryRun.inputSchema.required, ["customerId"]);
  });

  test("offers: create, list and read as the caller's tenant, with an audit entry naming the caller", async () => {
    const client = await connect(tenant.apiKey);
    const name = unique("mcp-offer");
    const created = await callTool(client, "create_offer", { name, status: "active", priority: 7, businessValue: 12.5, tags: ["mcp"] });
    assert.equal(created.isError, false, created.text);
    assert.equal(created.json.name, name);
    assert.equal(created.json.version, 1);
    const listed = await callTool(client, "list_offers", { limit: 100 });
    assert.ok(listed.json.data.some((o: any) => o.id === created.json.id));
    const read = await callTool(client, "get_offer", { id: name });
    assert.equal(read.json.id, created.json.id);
    assert.equal(read.json.priority, 7);
    const [audit] = await svc.sql("SELECT action, user_id FROM audit_log WHERE tenant_id = $1 AND entity_id = $2", [tenant.tenantId, created.json.id]);
    assert.deepEqual({ ...audit }, { action: "create", user_id: tenant.userId });
    const other = await svc.createTenant();
    const foreign = await callTool(await connect(other.apiKey), "get_offer", { id: created.json.id });
    assert.equal(foreign.isError, true);
    assert.match(foreign.text, /not found/i);
  });

  test("a viewer reads but is refused create_offer, and nothing is written", async () => {
    const viewer = await svc.createUser(tenant.tenantId, "viewer");
    const client = await connect(viewer.apiKey);
    assert.equal((await callTool(client, "list_offers", {})).isError, false);
    const name = unique("viewer-offer");
    const refused = await callTool(client, "create_offer", { name });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /requires the editor role/);
    assert.deepEqual(await svc.sql("SELECT id FROM offers WHERE tenant_id = $1 AND name = $2", [tenant.tenantId, name]), []);
    const editor = await svc.createUser(tenant.tenantId, "editor");
    assert.equal((await callTool(await connect(editor.apiKey), "create_offer", { name })).isError, false);
  });

  test("an OAuth access token works too, with the role its scopes give", async () => {
    const oauth = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { name: "agent", scopes: ["read"] } });
    const token = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: { grant_type: "client_credentials", client_id: oauth.body.clientId, client_secret: oauth.body.clientSecret } });
    const client = new Client({ name: "mcp-oauth", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/api/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${token.body.access_token}` } } }));
    clients.push(client);
    assert.equal((await callTool(client, "list_offers", {})).isError, false);
    const refused = await callTool(client, "create_offer", { name: unique("oauth-offer") });
    assert.match(refused.text, /requires the editor role; the caller has viewer/);
  });

  test("bad arguments are tool errors naming the field; service validation errors keep their message", async () => {
    const client = await connect(tenant.apiKey);
    const missing = await callTool(client, "dry_run_recommend", {});
    assert.equal(missing.isError, true);
    assert.match(missing.text, /customerId/);
    const wrongType = await callTool(client, "list_offers", { limit: "many" });
    assert.equal(wrongType.isError, true);
    assert.match(wrongType.text, /limit/);
    const tooMany = await callTool(client, "list_offers", { limit: 1000 });
    assert.match(tooMany.text, /limit/);
    const unknownChannel = await callTool(client, "dry_run_recommend", { customerId: "c", channel: "nowhere" });
    assert.equal(unknownChannel.isError, true);
    assert.match(unknownChannel.text, /channel: unknown channel nowhere/);
    const duplicate = unique("dup");
    await callTool(client, "create_offer", { name: duplicate });
    const again = await callTool(client, "create_offer", { name: duplicate });
    assert.equal(again.isError, true);
    assert.match(again.text, new RegExp(duplicate));
    const unknownTool = await client.callTool({ name: "drop_tables", arguments: {} });
    assert.equal(unknownTool.isError, true);
  });

  test("dry-run Recommend decides and explains, stores nothing, and does not count against the quota", async () => {
    const t = await svc.createTenant();
    for (const [priority, name] of [[90, "high"], [10, "low"]] as const) {
      const res = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: t.apiKey, body: { name, status: "active", priority } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const client = await connect(t.apiKey);
    const redis = svc.running.foundation.redis!;
    // Matches with or without the client's key prefix: every key of this tenant.
    // Request statistics are operational, not decision state, and each process flushes them about once a second.
    const stats = tenantKey(t.tenantId, "reqstats", "");
    const tenantKeys = async () => (await redis.keys(`*${tenantKey(t.tenantId, "*")}`)).filter((k) => !k.includes(stats)).sort();
    const keysBefore = await tenantKeys();
    const before = await rowCounts(t.tenantId);
    for (let i = 0; i < QUOTA + 2; i++) {
      const run = await callTool(client, "dry_run_recommend", { customerId: `dry-${i}`, limit: 2 });
      assert.equal(run.isError, false, run.text);
      assert.equal(run.json.dryRun, true);
      assert.equal(run.json.decision.recommendationId, "");
      assert.deepEqual(run.json.decision.offers.map((o: any) => o.offerName), ["high", "low"]);
      assert.equal(run.json.explanation.selected.length, 2);
      assert.match(run.json.explanation.summary, /2 offer\(s\) would be recommended/);
    }
    await svc.running.services.decisions.traces.flush();
    assert.deepEqual(await rowCounts(t.tenantId), before, "no recommendation, impression or trace rows");
    assert.deepEqual(await tenantKeys(), keysBefore, "no counter, reservation, evidence or assignment in Redis");
    const usage = await rest(svc.baseUrl, "GET", "/api/v1/workspace/usage", { key: t.apiKey });
    assert.deepEqual(usage.body, { decisionsUsed: 0, decisionQuota: QUOTA });
    // The quota is whole: real decisions still get all of it.
    const dataKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: t.apiKey, body: { name: "dp" } })).body.key;
    for (let i = 0; i < QUOTA; i++) assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId: `real-${i}` } })).status, 200);
    assert.ok((await tenantKeys()).length > keysBefore.length, "real decisions do write counters: the key pattern sees them");
  });

  test("traces and experiment results: list and read through the tools; a dry run under an experiment keeps no variant", async () => {
    const t = await svc.createTenant();
    const create = async (path: string, body: unknown) => {
      const res = await rest(svc.baseUrl, "POST", `/api/v1/${path}`, { key: t.apiKey, body });
      assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
      return res.body;
    };
    await create("offers", { name: "a", status: "active", priority: 50, businessValue: 50 });
    const formula = (term: string) => create("algorithm-models", { name: unique(term), key: unique(term), type: "formula", config: { weights: { priority: 0, businessValue: 0, propensity: 0, impact: 0, relevance: 0, [term]: 1 } } });
    const champion = await formula("businessValue");
    const challenger = await formula("impact");
    await create("decision-flows", { name: unique("flow"), key: unique("flow"), status: "active", config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: champion.key }, { type: "rank", count: 3 }] } });
    const experiment = await create("experiments", {
      name: unique("exp"),
      championModelId: champion.id,
      trafficSplit: { championPct: 50 },
      challengers: [{ modelId: challenger.id, key: "b", trafficPct: 50 }],
      holdoutPercent: 20,
      status: "active",
    });
    const client = await connect(t.apiKey);

    const dry = await callTool(client, "dry_run_recommend", { customerId: "experimental" });
    assert.equal(dry.isError, false, dry.text);
    assert.equal(dry.json.decision.experiment.id, experiment.id);
    assert.match(dry.json.explanation.experiment, new RegExp(dry.json.decision.experiment.variant));
    const kept = await svc.running.foundation.redis!.exists(tenantKey(t.tenantId, `exp:${experiment.id}:experimental`));
    assert.equal(kept, 0, "a dry run keeps no experiment variant");

    const dataKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: t.apiKey, body: { name: "dp" } })).body.key;
    const real = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId: "traced" } });
    assert.equal(real.status, 200, JSON.stringify(real.body));
    await svc.running.services.decisions.traces.flush();
    const list = await callTool(client, "list_decision_traces", { customerId: "traced" });
    assert.equal(list.isError, false, list.text);
    assert.equal(list.json.data.length, 1);
    const trace = await callTool(client, "get_decision_trace", { id: list.json.data[0].id });
    assert.equal(trace.json.recommendationId, real.body.recommendationId);
    assert.equal(trace.json.customerId, "traced");

    const results = await callTool(client, "get_experiment_results", { id: experiment.id });
    assert.equal(results.isError, false, results.text);
    assert.deepEqual(results.json.variants.map((v: any) => v.variant ?? v.key ?? v.name).length, 3, JSON.stringify(results.json));
    assert.equal(results.json.parameters.confidenceLevel, 0.95);
    const badLevel = await callTool(client, "get_experiment_results", { id: experiment.id, confidenceLevel: 2 });
    assert.match(badLevel.text, /confidenceLevel/);
    const missing = await callTool(client, "get_experiment_results", { id: "00000000-0000-0000-0000-000000000000" });
    assert.equal(missing.isError, true);
    assert.match(missing.text, /not found/i);
  });
});

describe("MCP endpoint access (spec 5.1, 5.2)", () => {
  const initialize = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } } };
  const post = (headers: Record<string, string>, body: unknown = initialize) =>
    rest(svc.baseUrl, "POST", "/api/v1/mcp", { body, headers: { accept: "application/json, text/event-stream", ...headers } });

  test("a data-plane key is 403 Forbidden saying so; the SDK client cannot connect with it", async () => {
    const dataKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "dp" } })).body.key;
    const res = await post({ "x-api-key": dataKey });
    assert.equal(res.status, 403);
    assert.equal(res.body.title, "Forbidden");
    assert.match(res.body.detail, /data plane/);
    await assert.rejects(connect(dataKey));
    const scimKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "scim", scopes: ["scim"] } })).body.key;
    assert.equal((await post({ "x-api-key": scimKey })).status, 403, "a scim key is not a control-plane key");
  });

  test("no credentials or a Bearer API key is 401; the CSRF guard and the method are enforced", async () => {
    assert.equal((await post({})).status, 401);
    assert.equal((await post({ authorization: `Bearer ${tenant.apiKey}` })).status, 401);
    const form = await rest(svc.baseUrl, "POST", "/api/v1/mcp", { key: tenant.apiKey, rawBody: "{}", headers: { "content-type": "text/plain" } });
    assert.equal(form.status, 403);
    assert.match(form.body.detail, /Content-Type/);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/mcp", { key: tenant.apiKey })).status, 405);
    assert.equal((await rest(svc.baseUrl, "DELETE", "/api/v1/mcp", { key: tenant.apiKey })).status, 405);
    const ok = await post({ "x-api-key": tenant.apiKey });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal(ok.body.result.serverInfo.name, "decisioning-service");
    assert.equal(ok.headers.get("mcp-session-id"), null, "stateless: no session");
  });

  test("each request counts in the tenant's default rate window (429 past it)", async () => {
    const limited = await svc.createTenant();
    await svc.identity.setTenantRateLimits(limited.tenantId, { default: { limit: 1, windowSeconds: 60 } });
    assert.equal((await post({ "x-api-key": limited.apiKey })).status, 200);
    const refused = await post({ "x-api-key": limited.apiKey });
    assert.equal(refused.status, 429);
    assert.ok(refused.headers.get("retry-after"));
  });

  test("a malformed JSON-RPC body is a 4xx, never a 500", async () => {
    const notJson = await rest(svc.baseUrl, "POST", "/api/v1/mcp", { key: tenant.apiKey, rawBody: "{", headers: { "content-type": "application/json", accept: "application/json, text/event-stream" } });
    assert.equal(notJson.status, 400);
    for (const body of [{}, [], { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: 5 } }]) {
      const res = await post({ "x-api-key": tenant.apiKey }, body);
      assert.ok(res.status < 500, `${JSON.stringify(body)} → ${res.status}`);
    }
  });
});

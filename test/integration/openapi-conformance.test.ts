import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { Ajv2020 } from "ajv/dist/2020.js";
import { getOption, hasOption } from "@bufbuild/protobuf";
import { http as httpExt } from "../../gen/google/api/annotations_pb.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest, type RestResponse } from "../support/clients.js";
import { DOCS_CSP } from "../../src/openapi/openapi-routes.js";

const committed = readFileSync(join(import.meta.dirname, "../../gen/openapi/openapi.json"), "utf8");
const document = JSON.parse(committed);

// The document's schemas, compiled by JSON Schema 2020-12 (OpenAPI 3.1's dialect) with its components.
const ajv = new Ajv2020({
  strict: false,
  allErrors: true,
  formats: { "date-time": (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s), int32: true, int64: true, float: true, double: true },
});
ajv.addSchema(document, "openapi.json");

const pointer = (...steps: string[]) => steps.map((s) => s.replace(/~/g, "~0").replace(/\//g, "~1")).join("/");

/**
 * Checks one REST answer against the document: the status is one the operation declares (exactly or
 * as `4XX`/`5XX`), and a JSON body validates against that response's schema.
 */
function conforms(verb: string, template: string, res: RestResponse): void {
  const operation = document.paths[template]?.[verb.toLowerCase()];
  assert.ok(operation, `${verb} ${template} is in the document`);
  const status = String(res.status);
  const key = [status, `${status[0]}XX`].find((k) => operation.responses[k]);
  assert.ok(key, `${verb} ${template}: status ${status} is declared (${Object.keys(operation.responses)})`);
  let response = operation.responses[key];
  let path = pointer("paths", template, verb.toLowerCase(), "responses", key);
  if (response.$ref) {
    path = response.$ref.slice(2);
    response = document.components.responses[response.$ref.split("/").pop()];
  }
  if (!response.content) {
    assert.equal(res.body, null, `${verb} ${template} ${status} has no body`);
    return;
  }
  assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
  const validate = ajv.getSchema(`openapi.json#/${path}/content/${pointer("application/json")}/schema`)!;
  assert.ok(validate(res.body), `${verb} ${template} ${status}: ${JSON.stringify(validate.errors, null, 1)}\n${JSON.stringify(res.body).slice(0, 2000)}`);
}

let svc: TestService;
let admin: { tenantId: string; apiKey: string };
let dataKey: string;
const unique = (base: string) => `${base}-${Math.random().toString(36).slice(2, 8)}`;

before(async () => {
  svc = await startTestService();
  admin = await svc.createTenant();
  dataKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: admin.apiKey, body: { name: "sdk" } })).body.key;
});
after(() => svc.stop());

describe("the document and its viewer", () => {
  test("GET /api/v1/openapi.json serves the committed document, without credentials", async () => {
    const res = await fetch(`${svc.baseUrl}/api/v1/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^application\/json/);
    assert.equal(await res.text(), committed);
  });

  test("every REST route the server serves is in the document, with its verb", () => {
    const missing: string[] = [];
    for (const { service } of svc.running.services.registrations) {
      for (const method of service.methods.filter((m) => hasOption(m, httpExt))) {
        const rule = getOption(method, httpExt);
        for (const r of [rule, ...rule.additionalBindings]) {
          if (!r.pattern.case || r.pattern.case === "custom") continue;
          const path = r.pattern.value.replace(/\{([a-z_]+)=([^*}]+)\}/g, "$2");
          if (!document.paths[path]?.[r.pattern.case]) missing.push(`${r.pattern.case.toUpperCase()} ${path}`);
        }
      }
    }
    assert.deepEqual(missing, []);
    assert.ok(Object.keys(document.paths).length > 50);
  });

  test("/api/docs is the viewer from this origin only: a strict CSP, no inline script, assets served locally", async () => {
    const page = await fetch(`${svc.baseUrl}/api/docs`);
    assert.equal(page.status, 200);
    assert.equal(page.headers.get("content-security-policy"), DOCS_CSP);
    assert.doesNotMatch(DOCS_CSP, /unsafe-inline|unsafe-eval|https?:/);
    const html = await page.text();
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length >= 2);
    for (const [, attrs, body] of scripts) {
      assert.match(attrs, /src="\/api\/docs\//);
      assert.equal(body.trim(), "", "no inline script");
    }
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    for (const asset of assets) {
      assert.match(asset, /^\/api\/docs\//, "no request leaves the origin");
      const res = await fetch(svc.baseUrl + asset);
      assert.equal(res.status, 200, asset);
      assert.equal(res.headers.get("x-content-type-options"), "nosniff");
      await res.arrayBuffer();
    }
    const init = await (await fetch(`${svc.baseUrl}/api/docs/init.js`)).text();
    assert.match(init, /url: "\/api\/v1\/openapi.json"/);
    assert.match(init, /validatorUrl: null/);
    assert.equal((await fetch(`${svc.baseUrl}/api/docs/`)).status, 200);
    const unknown = await rest(svc.baseUrl, "GET", "/api/docs/../../package.json");
    assert.equal(unknown.status, 404);
    assert.equal((await rest(svc.baseUrl, "GET", "/api/docs/index.css")).status, 404);
    assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/openapi.json", { body: {} })).status, 405);
  });
});

describe("REST answers conform to the document", () => {
  test("offers: create, list, get, update, remove, and the errors 400, 404, 409", async () => {
    const key = admin.apiKey;
    const created = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key, body: { name: unique("offer"), status: "active", tags: ["a"] } });
    assert.equal(created.status, 201);
    conforms("POST", "/api/v1/offers", created);
    const id = created.body.id;
    const list = await rest(svc.baseUrl, "GET", "/api/v1/offers?limit=10", { key });
    assert.equal(list.status, 200);
    conforms("GET", "/api/v1/offers", list);
    const got = await rest(svc.baseUrl, "GET", `/api/v1/offers/${id}`, { key });
    assert.equal(got.status, 200);
    conforms("GET", "/api/v1/offers/{id}", got);
    const patched = await rest(svc.baseUrl, "PUT", `/api/v1/offers/${id}`, { key, body: { priority: 70 } });
    assert.equal(patched.status, 200);
    conforms("PUT", "/api/v1/offers/{id}", patched);
    const invalid = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key, body: { name: unique("offer"), priority: "high" } });
    assert.equal(invalid.status, 400);
    conforms("POST", "/api/v1/offers", invalid);
    assert.ok(Array.isArray(invalid.body.errors));
    const duplicate = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key, body: { name: created.body.name } });
    assert.equal(duplicate.status, 409);
    conforms("POST", "/api/v1/offers", duplicate);
    const removed = await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${id}`, { key, headers: { "x-requested-with": "test" } });
    assert.equal(removed.status, 204, `${removed.status} ${JSON.stringify(removed.body)}`);
    conforms("DELETE", "/api/v1/offers/{id}", removed);
    const gone = await rest(svc.baseUrl, "GET", `/api/v1/offers/${randomUUID()}`, { key });
    assert.equal(gone.status, 404);
    conforms("GET", "/api/v1/offers/{id}", gone);
  });

  test("deletes (spec 7): 204 without a body, the offers collection's 200 with cascaded", async () => {
    const key = admin.apiKey;
    const create = async (path: string, body: unknown) => {
      const res = await rest(svc.baseUrl, "POST", path, { key, body });
      assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
      return res.body;
    };
    const offer = await create("/api/v1/offers", { name: unique("offer") });
    const channel = await create("/api/v1/channels", { name: unique("channel") });
    const creative = await create("/api/v1/creatives", { offerId: offer.id, name: unique("creative") });
    const budget = await create("/api/v1/budgets", { scope: "global", maxImpressions: 1000 });
    const flow = await create("/api/v1/decision-flows", { name: unique("flow"), key: unique("flow") });
    const model = await create("/api/v1/algorithm-models", { name: unique("model"), key: unique("model"), type: "adaptive", family: "f" });
    const journey = await create("/api/v1/journeys", { name: unique("journey"), steps: [{ type: "decision" }] });
    const trigger = await create("/api/v1/triggers", { name: unique("trigger"), eventType: "e", action: { type: "journey", journeyId: journey.id } });
    const identity = await create("/api/v1/customers/dee/identities", { type: "email", value: `${unique("dee")}@example.com` });
    for (const [path, template] of [
      [`/api/v1/channels?id=${channel.id}`, "/api/v1/channels"],
      [`/api/v1/creatives?id=${creative.id}`, "/api/v1/creatives"],
      [`/api/v1/budgets?id=${budget.id}`, "/api/v1/budgets"],
      [`/api/v1/decision-flows/${flow.id}`, "/api/v1/decision-flows/{id}"],
      [`/api/v1/algorithm-models/${model.id}`, "/api/v1/algorithm-models/{id}"],
      [`/api/v1/triggers/${trigger.id}`, "/api/v1/triggers/{id}"],
      [`/api/v1/journeys/${journey.id}`, "/api/v1/journeys/{id}"],
      [`/api/v1/customers/dee/identities/${identity.id}`, "/api/v1/customers/{customer_id}/identities/{id}"],
    ]) {
      const res = await rest(svc.baseUrl, "DELETE", path, { key, headers: { "x-requested-with": "test" } });
      assert.equal(res.status, 204, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
      assert.equal(res.headers.get("content-type"), null, path);
      conforms("DELETE", template, res);
    }
    const cascading = await rest(svc.baseUrl, "DELETE", `/api/v1/offers?id=${offer.id}`, { key, headers: { "x-requested-with": "test" } });
    assert.equal(cascading.status, 200, JSON.stringify(cascading.body));
    assert.deepEqual(cascading.body, { success: true, id: offer.id, cascaded: 0 });
    conforms("DELETE", "/api/v1/offers", cascading);
  });

  test("recommend (with explain) and respond, and the data plane's structured 400", async () => {
    await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: admin.apiKey, body: { name: unique("offer"), status: "active" } });
    const rec = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId: "ana", explain: true } });
    assert.equal(rec.status, 200);
    assert.ok(rec.body.offers.length >= 1);
    conforms("POST", "/api/v1/recommend", rec);
    const plain = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: dataKey, body: { customerId: "bo" } });
    conforms("POST", "/api/v1/recommend", plain);
    const responded = await rest(svc.baseUrl, "POST", "/api/v1/respond", {
      key: dataKey,
      body: { customerId: "ana", outcome: "click", recommendationId: rec.body.recommendationId, rank: 1, idempotencyKey: unique("k") },
    });
    assert.ok(responded.status < 300, JSON.stringify(responded.body));
    conforms("POST", "/api/v1/respond", responded);
    const noKey = await rest(svc.baseUrl, "POST", "/api/v1/respond", { key: dataKey, body: { customerId: "ana", outcome: "click" } });
    assert.equal(noKey.status, 400);
    assert.ok(noKey.body.error, "the structured shape");
    conforms("POST", "/api/v1/respond", noKey);
    const unauthenticated = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { body: { customerId: "ana" } });
    assert.equal(unauthenticated.status, 401);
    conforms("POST", "/api/v1/recommend", unauthenticated);
  });

  test("audit logs: list, verify, and the token endpoint's OAuth error", async () => {
    const logs = await rest(svc.baseUrl, "GET", "/api/v1/audit-logs?limit=5", { key: admin.apiKey });
    assert.equal(logs.status, 200);
    assert.ok(logs.body.logs.length >= 1);
    conforms("GET", "/api/v1/audit-logs", logs);
    const verify = await rest(svc.baseUrl, "GET", "/api/v1/audit-logs/verify", { key: admin.apiKey });
    assert.equal(verify.status, 200);
    conforms("GET", "/api/v1/audit-logs/verify", verify);
    const token = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: { grant_type: "password" } });
    assert.equal(token.status, 400);
    conforms("POST", "/api/v1/oauth/token", token);
  });
});

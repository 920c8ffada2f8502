import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { Code } from "@connectrpc/connect";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, rest, rpcError, type RestResponse } from "../support/clients.js";
import { DecisionService, OutcomeService } from "../../gen/decisioning/v1/decisions_pb.js";
import { OfferService } from "../../gen/decisioning/v1/catalog_pb.js";
import { ENTRY_KINDS } from "../../src/catalog/catalog-rules.js";

/**
 * The hostile inputs named in issue 13, on each door they apply to: each is a 4xx naming the field
 * (spec 7), and none writes anything.
 */
let svc: TestService;
let key: string;
let foreignOfferId: string;
let offerId: string;

before(async () => {
  svc = await startTestService();
  key = (await svc.createTenant("hostile")).apiKey;
  const other = await svc.createTenant("other");
  foreignOfferId = (await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: other.apiKey, body: { name: "theirs" } })).body.id;
  offerId = (await rest(svc.baseUrl, "POST", "/api/v1/offers", { key, body: { name: "ours", status: "active" } })).body.id;
});
after(() => svc.stop());

const withKey = () => ({ headers: { "x-api-key": key } });
const json = { "content-type": "application/json" };
const raw = (method: string, path: string, rawBody?: string) => rest(svc.baseUrl, method, path, { key, rawBody, headers: json });
const offerCount = async () => (await rest(svc.baseUrl, "GET", "/api/v1/offers?limit=100&includeDeleted=true", { key })).body.data.length as number;

/** A REST answer's reason and the message naming the field, whichever of spec 7's shapes it is in. */
function refusal(res: RestResponse): { status: number; reason: string | null; message: string } {
  const message = res.body?.detail ?? res.body?.error?.message ?? res.body?.error_description ?? "";
  return { status: res.status, reason: res.headers.get("x-error-reason"), message };
}

describe("REST: the issue's examples and their kin are 400 naming the field", () => {
  const cases: Array<[string, () => Promise<RestResponse>, string, RegExp]> = [
    ["PUT /offers/%ZZ (malformed percent-encoding)", () => raw("PUT", "/api/v1/offers/%ZZ", '{"name":"x"}'), "VALIDATION_FAILED", /^id: is not valid percent-encoded UTF-8$/],
    ["PUT /offers/%C0%AF (overlong UTF-8)", () => raw("PUT", "/api/v1/offers/%C0%AF", '{"name":"x"}'), "VALIDATION_FAILED", /^id: is not valid percent-encoded UTF-8$/],
    ["POST /recommend with NUL in customerId", () => raw("POST", "/api/v1/recommend", '{"customerId":"a\\u0000b"}'), "VALIDATION_FAILED", /^customerId: must not contain control characters \(U\+0000 at 1\)$/],
    ["POST /respond with NUL in idempotencyKey", () => raw("POST", "/api/v1/respond", '{"customerId":"c","outcome":"click","idempotencyKey":"k\\u0000","creativeId":"x"}'), "VALIDATION_FAILED", /^idempotencyKey: must not contain control characters/],
    ["a number beyond 2^53 in a string field", () => raw("POST", "/api/v1/offers", '{"name":"big","description":9007199254740993}'), "VALIDATION_FAILED", /^description: expected string/],
    ["a number beyond int32 in an integer field", () => raw("POST", "/api/v1/offers", '{"name":"big","priority":9007199254740993}'), "VALIDATION_FAILED", /^priority: .*out of range/],
    ["NaN in a number field", () => raw("POST", "/api/v1/offers", '{"name":"nan","margin":"NaN"}'), "VALIDATION_FAILED", /^margin: must be a finite number$/],
    ["a whole number beyond 2^53 in free JSON", () => raw("POST", "/api/v1/offers", '{"name":"big","metadata":{"n":9007199254740993}}'), "VALIDATION_FAILED", /^metadata\.n: must be a whole number within/],
    ["NUL inside free JSON", () => raw("POST", "/api/v1/offers", '{"name":"nul","metadata":{"a":["\\u0000"]}}'), "VALIDATION_FAILED", /^metadata\.a\[0\]: must not contain control characters/],
    ["an unpaired surrogate inside free JSON", () => raw("POST", "/api/v1/recommend", '{"customerId":"c","context":{"k":"\\ud800"}}'), "VALIDATION_FAILED", /^context\.k: must be valid Unicode/],
    ["a string over 10,000 characters", () => raw("POST", "/api/v1/api-keys", JSON.stringify({ name: "k", scopes: ["a".repeat(10_001)] })), "VALIDATION_FAILED", /^scopes\[0\]: must be at most 10000 characters$/],
    ["a timestamp past 9999", () => raw("POST", "/api/v1/api-keys", '{"name":"k","expiresAt":"10000-01-01T00:00:00Z"}'), "VALIDATION_FAILED", /^expiresAt: /],
    ["JSON nested 65 levels deep", () => raw("POST", "/api/v1/offers", `{"name":"deep","metadata":${'{"a":'.repeat(64)}1${"}".repeat(64)}}`), "NESTING_TOO_DEEP", /^metadata: nests deeper than 64 levels$/],
    ["a body that is not UTF-8", () => rest(svc.baseUrl, "POST", "/api/v1/offers", { key, headers: json, rawBody: Buffer.from([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d]) as never }), "MALFORMED_UTF8", /^The request body is not valid UTF-8$/],
    ["a wrong JSON type", () => raw("POST", "/api/v1/offers", '{"name":["x"]}'), "VALIDATION_FAILED", /^name: /],
    ["a number sent as a string in an integer field", () => raw("POST", "/api/v1/offers", '{"name":"quoted","priority":"70"}'), "VALIDATION_FAILED", /^priority: expected number \(int32\), got "70"$/],
    ["a number sent as a string in a list item", () => raw("POST", "/api/v1/respond/bulk", '{"items":[{"customerId":"c","outcome":"click","rank":1},{"customerId":"c","outcome":"click","conversionValue":"9.5"}]}'), "VALIDATION_FAILED", /^items\[1\]\.conversionValue: expected number \(double\), got "9.5"$/],
    ["a body that is not an object", () => raw("POST", "/api/v1/recommend", "[1]"), "VALIDATION_FAILED", /^body: must be a JSON object$/],
    ["an empty body where fields are required", () => raw("POST", "/api/v1/recommend", ""), "VALIDATION_FAILED", /^customerId: /],
    ["a scalar query parameter given twice", () => raw("GET", "/api/v1/offers?limit=1&limit=2"), "VALIDATION_FAILED", /^limit: must be given once, as a single value$/],
    ["a scalar query parameter given as a list", () => raw("GET", "/api/v1/audit-logs?entityType[]=offer"), "VALIDATION_FAILED", /^entityType: must be given once, as a single value$/],
    ["a query value that is not valid percent-encoded UTF-8", () => raw("GET", "/api/v1/audit-logs?entityType=%C0%AF"), "VALIDATION_FAILED", /^entityType: is not valid percent-encoded UTF-8$/],
    ["a NUL in a query value", () => raw("GET", "/api/v1/change-history?entityId=%00"), "VALIDATION_FAILED", /^entityId: must not contain control characters/],
    ["a NUL in a path id", () => raw("GET", "/api/v1/customers/a%00b"), "VALIDATION_FAILED", /^customerId: must not contain control characters/],
  ];
  for (const [name, call, reason, message] of cases) {
    test(name, async () => {
      const before = await offerCount();
      const got = refusal(await call());
      assert.equal(got.status, 400, JSON.stringify(got));
      assert.equal(got.reason, reason);
      assert.match(got.message, message);
      assert.equal(await offerCount(), before, "nothing was written");
    });
  }

  test("the token endpoint answers the same refusals in OAuth's shape", async () => {
    const res = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: { grant_type: "client_credentials", client_id: "a\u0000", client_secret: "s" } });
    assert.equal(res.status, 400);
    assert.equal(res.body.error, "invalid_request");
    assert.match(res.body.error_description, /^client_id: must not contain control characters/);
  });

  test("malformed, unknown and foreign ids: 404 (spec 7), and a multi-line description is stored as sent", async () => {
    for (const path of ["/api/v1/offers/not-a-uuid", `/api/v1/offers/${foreignOfferId}`, "/api/v1/categories/%E2%82%AC", "/api/v1/decision-flows/1"]) {
      assert.equal((await raw("GET", path)).status, 404, path);
    }
    const updated = await raw("PUT", `/api/v1/offers/${offerId}`, JSON.stringify({ description: "one\r\ntwo\tthree" }));
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.description, "one\r\ntwo\tthree");
  });
});

describe("Connect JSON and gRPC refuse the same inputs, naming the field", () => {
  const connectPost = (method: string, body: string) => rest(svc.baseUrl, "POST", `/api/v1/${method}`, { key, rawBody: body, headers: json });

  test("Connect JSON: NUL, nesting, bad UTF-8 and NaN are invalid_argument with the REST message", async () => {
    const cases: Array<[string, string, string, RegExp]> = [
      ["decisioning.v1.DecisionService/Recommend", '{"customerId":"a\\u0000b"}', "VALIDATION_FAILED", /^customerId: must not contain control characters/],
      ["decisioning.v1.OutcomeService/Respond", '{"customerId":"c","idempotencyKey":"\\u0000"}', "VALIDATION_FAILED", /^idempotencyKey: must not contain control characters/],
      ["decisioning.v1.OfferService/CreateOffer", `{"name":"d","metadata":${"[".repeat(70)}${"]".repeat(70)}}`, "NESTING_TOO_DEEP", /^metadata: nests deeper/],
      ["decisioning.v1.OfferService/CreateOffer", '{"name":"n","businessValue":"Infinity"}', "VALIDATION_FAILED", /^businessValue: must be a finite number$/],
      ["decisioning.v1.DecisionService/Recommend", '{"customerId":"c","limit":"3"}', "VALIDATION_FAILED", /^limit: expected number \(int32\), got "3"$/],
    ];
    for (const [method, body, reason, message] of cases) {
      const res = await connectPost(method, body);
      assert.equal(res.status, 400, `${method} ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, "invalid_argument");
      assert.equal(res.headers.get("x-error-reason"), reason);
      assert.match(res.body.message, message);
    }
    const bytes = await rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.DecisionService/Recommend", { key, headers: json, rawBody: Buffer.from([0x7b, 0x7d, 0x80]) as never });
    assert.deepEqual([bytes.status, bytes.headers.get("x-error-reason")], [400, "MALFORMED_UTF8"]);
  });

  test("gRPC: what only a binary message can carry (NaN, a timestamp past 9999, bad UTF-8) is INVALID_ARGUMENT", async () => {
    const before = await offerCount();
    const grpcOffers = grpcClient(OfferService, svc.grpcAddress);
    const nan = await rpcError(grpcOffers.createOffer({ name: "nan", margin: Number.NaN }, withKey()));
    assert.deepEqual(nan, { code: Code.InvalidArgument, reason: "VALIDATION_FAILED", message: "margin: must be a finite number" });
    const nul = await rpcError(grpcClient(DecisionService, svc.grpcAddress).recommend({ customerId: "a\u0000b" }, withKey()));
    assert.equal(nul.code, Code.InvalidArgument);
    assert.match(nul.message, /^customerId: must not contain control characters/);
    const far = await rpcError(grpcClient(OutcomeService, svc.grpcAddress).respond({ customerId: "c", outcome: "click", idempotencyKey: "k", creativeId: offerId, timestamp: { seconds: 10n ** 15n, nanos: 0 } }, withKey()));
    assert.deepEqual([far.code, far.reason], [Code.InvalidArgument, "VALIDATION_FAILED"]);
    assert.match(far.message, /^timestamp: must be from 0001-01-01/);
    const deep = await rpcError(grpcOffers.createOffer({ name: "deep", metadata: JSON.parse(`${'{"a":'.repeat(70)}1${"}".repeat(70)}`) }, withKey()));
    assert.deepEqual([deep.code, deep.reason], [Code.InvalidArgument, "NESTING_TOO_DEEP"]);
    // Field 1 (customer_id) holding C0 AF: not UTF-8, which proto3 strings must be.
    const client = new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set("x-api-key", key);
    const status = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.makeUnaryRequest("/decisioning.v1.DecisionService/Recommend", (b: Buffer) => b, (b: Buffer) => b, Buffer.from([0x0a, 0x02, 0xc0, 0xaf]), metadata, (err) => resolve(err)),
    );
    client.close();
    assert.equal(status?.code, grpc.status.INVALID_ARGUMENT);
    assert.equal(status?.metadata.get("x-error-reason")[0], "MALFORMED_MESSAGE");
    // The Connect client of the same door agrees.
    const viaConnect = await rpcError(connectClient(OfferService, svc.baseUrl, true).createOffer({ name: "nan", margin: Number.NaN }, withKey()));
    assert.deepEqual(viaConnect, nan);
    assert.equal(await offerCount(), before, "nothing was written");
  });
});

describe("unknown /api/v1 paths are 404 whoever calls (spec 7)", () => {
  const unknown = ["/api/v1/nope", "/api/v1/offer", "/api/v1/nope/123", "/api/v1/categories/x/y"];

  test("no credentials, wrong credentials, valid credentials, any method, a big body", async () => {
    const callers: Array<[string, Record<string, string>]> = [
      ["none", {}],
      ["wrong key", { "x-api-key": "krn_wrong" }],
      ["wrong bearer", { authorization: "Bearer nope" }],
      ["valid key", { "x-api-key": key }],
    ];
    for (const path of unknown) {
      for (const [who, headers] of callers) {
        for (const method of ["GET", "POST", "PUT", "DELETE", "PATCH"]) {
          const res = await rest(svc.baseUrl, method, path, { headers: { ...headers, ...json }, rawBody: method === "GET" ? undefined : "{}" });
          assert.equal(res.status, 404, `${who} ${method} ${path}: ${JSON.stringify(res.body)}`);
          assert.equal(res.body.reason, "NOT_FOUND");
        }
      }
      const big = await rest(svc.baseUrl, "POST", path, { headers: json, rawBody: `{"x":"${"a".repeat(3 * 1024 * 1024)}"}` });
      assert.equal(big.status, 404, "a body over any limit still learns only that the path names nothing");
    }
  });

  test("every catalog collection is still routed, each by its own literal path", async () => {
    const collections = Object.values(ENTRY_KINDS).map((k) => k.collection);
    assert.ok(collections.length >= 12);
    for (const collection of collections) {
      const list = await rest(svc.baseUrl, "GET", `/api/v1/${collection}`, { key });
      assert.equal(list.status, 200, `${collection}: ${JSON.stringify(list.body)}`);
      assert.equal((await rest(svc.baseUrl, "PATCH", `/api/v1/${collection}`, { key, body: {} })).status, 405, `${collection}: a known path with another verb`);
    }
    const category = await rest(svc.baseUrl, "POST", "/api/v1/categories", { key, body: { name: "literal route" } });
    assert.equal(category.status, 201);
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/categories/${category.body.id}`, { key })).body.name, "literal route");
  });
});

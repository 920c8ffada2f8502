import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { startTestService, type TestService } from "../support/service.js";
import { connectClient, grpcClient, postFrom, rest, rpcError, type RestResponse } from "../support/clients.js";
import { ApiKeyService, OAuthService } from "../../gen/decisioning/v1/identity_pb.js";

let svc: TestService;

// Small deployment limits (RATE_LIMITS) keep the test fast; the spec's values are the defaults in proto.
before(async () => {
  svc = await startTestService({
    rateLimits: {
      default: { limit: 3, windowSeconds: 60 },
      offers: { limit: 5, windowSeconds: 60 },
      oauth_token: { limit: 2, windowSeconds: 60 },
    },
  });
});
after(() => svc.stop());

const listKeys = (key: string) => rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key });

function assertLimited(res: RestResponse, limit: number): void {
  assert.equal(res.status, 429);
  assert.equal(res.body.error, "Too Many Requests");
  assert.ok(Number.isInteger(res.body.retryAfter) && res.body.retryAfter > 0 && res.body.retryAfter <= 60);
  assert.equal(res.headers.get("retry-after"), String(res.body.retryAfter));
  assert.equal(res.headers.get("x-ratelimit-limit"), String(limit));
  assert.equal(res.headers.get("x-ratelimit-remaining"), "0");
}

describe("sliding-window rate limits (spec 8)", () => {
  test("the default bucket counts per tenant and says so in the headers; the 429 has the spec's body", async () => {
    const a = await svc.createTenant();
    const b = await svc.createTenant();
    for (const remaining of ["2", "1", "0"]) {
      const res = await listKeys(a.apiKey);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-ratelimit-limit"), "3");
      assert.equal(res.headers.get("x-ratelimit-remaining"), remaining);
    }
    assertLimited(await listKeys(a.apiKey), 3);
    assert.equal((await listKeys(b.apiKey)).status, 200, "another tenant has a window of its own");
  });

  test("a call let through that then fails was counted, and its error answer says what is left", async () => {
    const t = await svc.createTenant();
    const bad = await rest(svc.baseUrl, "DELETE", "/api/v1/api-keys?id=nope", { key: t.apiKey, body: {} });
    assert.equal(bad.status, 404);
    assert.equal(bad.headers.get("x-ratelimit-limit"), "3");
    assert.equal(bad.headers.get("x-ratelimit-remaining"), "2");
    const viaConnect = await rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.ApiKeyService/RevokeApiKey", { key: t.apiKey, body: { id: "nope" } });
    assert.equal(viaConnect.status, 404);
    assert.equal(viaConnect.headers.get("x-ratelimit-remaining"), "1");
  });

  test("a route's bucket replaces the default instead of adding to it (offers list)", async () => {
    const t = await svc.createTenant();
    for (let i = 0; i < 5; i++) {
      const res = await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: t.apiKey });
      assert.equal(res.status, 200, `offers request ${i + 1}`);
      assert.equal(res.headers.get("x-ratelimit-limit"), "5");
    }
    assertLimited(await rest(svc.baseUrl, "GET", "/api/v1/offers", { key: t.apiKey }), 5);
    for (let i = 0; i < 3; i++) assert.equal((await listKeys(t.apiKey)).status, 200, "the default window is untouched");
  });

  test("a tenant's own limits override the deployment's", async () => {
    const t = await svc.createTenant();
    await svc.identity.setTenantRateLimits(t.tenantId, { default: { limit: 1, windowSeconds: 60 } });
    assert.equal((await listKeys(t.apiKey)).headers.get("x-ratelimit-limit"), "1");
    assertLimited(await listKeys(t.apiKey), 1);
  });

  test("concurrent requests cannot overrun the window (one atomic script, unique members)", async () => {
    const t = await svc.createTenant();
    const statuses = await Promise.all(Array.from({ length: 12 }, () => listKeys(t.apiKey).then((r) => r.status)));
    assert.equal(statuses.filter((s) => s === 200).length, 3);
    assert.equal(statuses.filter((s) => s === 429).length, 9);
  });

  test("the window slides: a request is allowed again once the oldest hit leaves it", async () => {
    const t = await svc.createTenant();
    await svc.identity.setTenantRateLimits(t.tenantId, { default: { limit: 1, windowSeconds: 1 } });
    assert.equal((await listKeys(t.apiKey)).status, 200);
    const limited = await listKeys(t.apiKey);
    assertLimited(limited, 1);
    assert.equal(limited.body.retryAfter, 1);
    await new Promise((r) => setTimeout(r, 1100));
    assert.equal((await listKeys(t.apiKey)).status, 200);
  });

  test("Connect and gRPC callers are limited the same way, with the reason and Retry-After in metadata", async () => {
    const t = await svc.createTenant();
    const headers = { "x-api-key": t.apiKey };
    for (let i = 0; i < 3; i++) await connectClient(ApiKeyService, svc.baseUrl).listApiKeys({}, { headers });
    for (const client of [connectClient(ApiKeyService, svc.baseUrl, true), grpcClient(ApiKeyService, svc.grpcAddress)]) {
      const err = await rpcError(client.listApiKeys({}, { headers }));
      assert.equal(err.code, Code.ResourceExhausted);
      assert.equal(err.reason, "RATE_LIMITED");
    }
    const viaHttp = await rest(svc.baseUrl, "POST", "/api/v1/decisioning.v1.ApiKeyService/ListApiKeys", { key: t.apiKey, body: {} });
    assert.equal(viaHttp.status, 429);
    assert.ok(Number(viaHttp.headers.get("retry-after")) > 0);
    assert.equal(viaHttp.headers.get("x-ratelimit-limit"), "3");
    assert.equal(viaHttp.headers.get("x-ratelimit-remaining"), "0");
  });
});

describe("the token endpoint's limiter (20 per 60 s per client_id, per IP when absent)", () => {
  test("counts per client_id, and per address for requests without one", async () => {
    const t = await svc.createTenant();
    const credentials = async () => {
      const c = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: t.apiKey, body: {} });
      return { grant_type: "client_credentials", client_id: c.body.clientId, client_secret: c.body.clientSecret };
    };
    const first = await credentials();
    const second = await credentials();
    const token = (body: unknown) => rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body });
    assert.equal((await token(first)).status, 200);
    assert.equal((await token({ ...first, client_secret: "kcs_wrong" })).status, 401, "failed attempts from the same address count too");
    const limited = await token(first);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error, "rate_limit_exceeded");
    assert.ok(limited.body.retryAfter > 0);
    assert.equal(limited.headers.get("retry-after"), String(limited.body.retryAfter));
    assert.equal((await token(second)).status, 200, "another client_id has a window of its own");

    const posingAsAddress = { ...first, client_id: "127.0.0.1" };
    assert.equal((await token(posingAsAddress)).status, 401);
    assert.equal((await token(posingAsAddress)).status, 401);
    assert.equal((await token(posingAsAddress)).status, 429);
    assert.equal((await token({ grant_type: "client_credentials" })).status, 400, "a client_id cannot spend an address's window");
    assert.equal((await token({ grant_type: "client_credentials" })).status, 400);
    assert.equal((await token({ grant_type: "client_credentials" })).status, 429, "without client_id the address is counted");

    // Over gRPC the address is read from the call's peer ("ipv4:127.0.0.1:<port>"): the same window as REST's.
    const grpc = grpcClient(OAuthService, svc.grpcAddress);
    const issued = await grpc.issueToken({ grantType: "client_credentials", clientId: second.client_id, clientSecret: second.client_secret });
    assert.equal(typeof issued.accessToken, "string", "a client_id keeps its own window over gRPC");
    const addressSpent = await rpcError(grpc.issueToken({ grantType: "client_credentials" }));
    assert.equal(addressSpent.code, Code.ResourceExhausted, "without client_id, the address REST spent");
  });

  test("wrong secrets sent with a victim's client_id from another address do not lock the victim out", async () => {
    const t = await svc.createTenant();
    const c = await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: t.apiKey, body: {} });
    const victim = { grant_type: "client_credentials", client_id: c.body.clientId, client_secret: c.body.clientSecret };
    const attacker = { ...victim, client_secret: "kcs_guess" };
    const from = (address: string, body: unknown) => postFrom(address, svc.baseUrl, "/api/v1/oauth/token", body);

    const attempts = [];
    for (let i = 0; i < 5; i++) attempts.push((await from("127.0.0.2", attacker)).status);
    assert.deepEqual(attempts, [401, 401, 429, 429, 429], "the attacker's address has its own window (2 per 60 s here)");
    const own = await from("127.0.0.1", victim);
    assert.equal(own.status, 200, JSON.stringify(own.body));
    assert.equal(typeof own.body.access_token, "string");

    // What one client is issued stays at the limit, whichever addresses it asks from.
    assert.equal((await from("127.0.0.3", victim)).status, 200);
    const third = await from("127.0.0.4", victim);
    assert.equal(third.status, 429, "a third token in the window is refused, from a fresh address too");
    assert.equal(third.body.error, "rate_limit_exceeded");
    assert.equal(third.headers.get("retry-after"), String(third.body.retryAfter));
  });
});


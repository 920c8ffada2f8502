import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { create, equals, fromJson, toBinary, toJson, type DescMessage } from "@bufbuild/protobuf";
import { Code, type Client } from "@connectrpc/connect";
import { startTestService, type TestService } from "../support/service.js";
import { methodPolicy } from "../../src/platform/method-policy.js";
import { chunkedPost, connectClient, grpcClient, rest, rpcError, type RestResponse } from "../support/clients.js";
import {
  ApiKeyService,
  CreateApiKeyRequestSchema,
  CreateApiKeyResponseSchema,
  ListApiKeysResponseSchema,
} from "../../gen/decisioning/v1/identity_pb.js";

let svc: TestService;
let tenant: { tenantId: string; userId: string; apiKey: string };
/** Another tenant's key id, and a data-plane key (no scopes) of this tenant. */
let foreignKeyId: string;
let dataPlaneKey: string;

before(async () => {
  svc = await startTestService();
  tenant = await svc.createTenant();
  const other = await svc.createTenant("foreign");
  foreignKeyId = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: other.apiKey, body: { name: "theirs" } })).body.id;
  dataPlaneKey = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "data plane" } })).body.key;
});
after(() => svc.stop());

/** The three RPC doors by name; REST is called by path beside them. */
function rpcDoors(): Array<[string, Client<typeof ApiKeyService>]> {
  return [
    ["connect-json", connectClient(ApiKeyService, svc.baseUrl)],
    ["connect-binary", connectClient(ApiKeyService, svc.baseUrl, true)],
    ["grpc", grpcClient(ApiKeyService, svc.grpcAddress)],
  ];
}

const withKey = (key: string) => ({ headers: { "x-api-key": key } });

/** REST's JSON (spec names, nulls) read back into the message the RPC doors return. */
const restMessage = <D extends DescMessage>(schema: D, res: RestResponse) => fromJson(schema, res.body, { ignoreUnknownFields: true });

/** CreateApiKey on the Connect door, called as plain HTTP to see its status and body. */
const CREATE_VIA_CONNECT = "/api/v1/decisioning.v1.ApiKeyService/CreateApiKey";

const countKeys = async () => (await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey })).body.total as number;

describe("one RPC, four doors (REST, Connect JSON, Connect binary, gRPC)", () => {
  test("CreateApiKey and ListApiKeys give the same messages through every door", async () => {
    const created = [restMessage(CreateApiKeyResponseSchema, await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "door", scopes: ["scim"] } }))];
    for (const [, client] of rpcDoors()) created.push(await client.createApiKey({ name: "door", scopes: ["scim"] }, withKey(tenant.apiKey)));
    // Ids, keys and times differ by nature; everything else is the same message.
    const comparable = created.map((m) => {
      assert.equal(m.prefix, m.key.slice(0, 12));
      const json = toJson(CreateApiKeyResponseSchema, m) as Record<string, unknown>;
      for (const field of ["id", "key", "prefix", "createdAt"]) delete json[field];
      return json;
    });
    for (const json of comparable) assert.deepEqual(json, comparable[0]);
    assert.equal(new Set(created.map((m) => m.id)).size, 4);

    const lists = [restMessage(ListApiKeysResponseSchema, await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey }))];
    for (const [, client] of rpcDoors()) lists.push(await client.listApiKeys({}, withKey(tenant.apiKey)));
    for (const list of lists) assert.ok(equals(ListApiKeysResponseSchema, list, lists[0]));
    for (const m of created) assert.ok(lists[0].data.some((k) => k.id === m.id));
  });

  const failures: Array<{
    name: string;
    rest: () => Promise<RestResponse>;
    rpc: (client: Client<typeof ApiKeyService>) => Promise<unknown>;
    http: number;
    code: Code;
    reason: string;
  }> = [
    {
      name: "400 validation",
      rest: () => rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: " ", scopes: ["root"] } }),
      rpc: (c) => c.createApiKey({ name: " ", scopes: ["root"] }, withKey(tenant.apiKey)),
      http: 400,
      code: Code.InvalidArgument,
      reason: "VALIDATION_FAILED",
    },
    {
      name: "404 another tenant's id",
      rest: () => rest(svc.baseUrl, "DELETE", `/api/v1/api-keys?id=${foreignKeyId}`, { key: tenant.apiKey, body: {} }),
      rpc: (c) => c.revokeApiKey({ id: foreignKeyId }, withKey(tenant.apiKey)),
      http: 404,
      code: Code.NotFound,
      reason: "NOT_FOUND",
    },
    {
      name: "403 data-plane key on the control plane",
      rest: () => rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: dataPlaneKey }),
      rpc: (c) => c.listApiKeys({}, withKey(dataPlaneKey)),
      http: 403,
      code: Code.PermissionDenied,
      reason: "DATA_PLANE_KEY",
    },
    {
      name: "401 no credential",
      rest: () => rest(svc.baseUrl, "GET", "/api/v1/api-keys"),
      rpc: (c) => c.listApiKeys({}),
      http: 401,
      code: Code.Unauthenticated,
      reason: "MISSING_CREDENTIALS",
    },
  ];
  for (const f of failures) {
    test(`${f.name}: the same code, reason and message through every door, and nothing written`, async () => {
      const before = await countKeys();
      const viaRest = await f.rest();
      assert.equal(viaRest.status, f.http);
      assert.equal(viaRest.headers.get("x-error-reason"), f.reason);
      for (const [door, client] of rpcDoors()) {
        const err = await rpcError(f.rpc(client));
        assert.deepEqual(err, { code: f.code, reason: f.reason, message: viaRest.body.detail }, door);
      }
      assert.equal(await countKeys(), before);
    });
  }

  test("wrong JSON types name the field the same way on REST and Connect JSON, after authentication", async () => {
    const body = { name: 42 };
    const viaRest = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body });
    const viaConnect = await rest(svc.baseUrl, "POST", CREATE_VIA_CONNECT, { key: tenant.apiKey, body });
    assert.equal(viaRest.status, 400);
    assert.equal(viaConnect.status, 400);
    assert.match(viaRest.body.detail, /^name: /);
    assert.equal(viaConnect.body.message, viaRest.body.detail);
    assert.equal(viaConnect.headers.get("x-error-reason"), "VALIDATION_FAILED");
    const malformed = await rest(svc.baseUrl, "POST", CREATE_VIA_CONNECT, { key: tenant.apiKey, rawBody: "{nope", headers: { "content-type": "application/json" } });
    assert.deepEqual([malformed.status, malformed.body.message], [400, "Invalid JSON"]);
    const anonymous = await rest(svc.baseUrl, "POST", CREATE_VIA_CONNECT, { body });
    assert.equal(anonymous.status, 401, "an anonymous caller learns nothing from the body");
  });
});

describe("body limits and content types (spec 7, 8)", () => {
  const overLimit = 2_000_001; // the default limit of methods that declare none (CreateApiKey): spec 7's 2 MB
  const big = { name: "x".repeat(overLimit) };

  test("REST: 413 in the plane's shape, declared or chunked, and nothing written", async () => {
    const before = await countKeys();
    const declared = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: big });
    const chunked = await chunkedPost(svc.baseUrl, "/api/v1/api-keys", { "x-api-key": tenant.apiKey, "content-type": "application/json" }, overLimit);
    for (const res of [declared, chunked]) {
      assert.equal(res.status, 413);
      assert.equal(res.body.title, "Payload Too Large");
      assert.match(res.body.detail, /exceeds the limit of 2000000 bytes/);
      assert.equal(res.headers.get("x-error-reason"), "PAYLOAD_TOO_LARGE");
    }
    assert.equal(await countKeys(), before);
  });

  test("Connect: 413 (not Connect's 429), with the spec's fields beside Connect's code", async () => {
    const before = await countKeys();
    const declared = await rest(svc.baseUrl, "POST", CREATE_VIA_CONNECT, { key: tenant.apiKey, body: big });
    const chunked = await chunkedPost(svc.baseUrl, CREATE_VIA_CONNECT, { "x-api-key": tenant.apiKey, "content-type": "application/json" }, overLimit);
    for (const res of [declared, chunked]) {
      assert.equal(res.status, 413);
      assert.equal(res.body.code, "resource_exhausted");
      assert.equal(res.body.title, "Payload Too Large");
      assert.equal(res.headers.get("x-error-reason"), "PAYLOAD_TOO_LARGE");
    }
    const viaClient = await rpcError(connectClient(ApiKeyService, svc.baseUrl, true).createApiKey(big, withKey(tenant.apiKey)));
    assert.equal(viaClient.code, Code.ResourceExhausted);
    assert.equal(viaClient.reason, "PAYLOAD_TOO_LARGE");
    assert.equal(await countKeys(), before);
  });

  test("gRPC: RESOURCE_EXHAUSTED over the method's limit and over the server's receive size", async () => {
    const client = grpcClient(ApiKeyService, svc.grpcAddress);
    const overMethod = await rpcError(client.createApiKey(big, withKey(tenant.apiKey)));
    assert.equal(overMethod.code, Code.ResourceExhausted);
    assert.equal(overMethod.reason, "PAYLOAD_TOO_LARGE");
    // The server's receive size is the largest method limit; grpc-js refuses more before any handler
    // runs. A grpc-js client sees its status (Connect's gRPC client reports the stream reset instead).
    const largest = Math.max(...svc.running.services.registrations.flatMap((r) => r.service.methods).map((m) => methodPolicy(m, overLimit).maxBodyBytes));
    const native = new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure());
    const request = Buffer.from(toBinary(CreateApiKeyRequestSchema, create(CreateApiKeyRequestSchema, { name: "x".repeat(largest + 1) })));
    const status = await new Promise<grpc.ServiceError | null>((resolve) =>
      native.makeUnaryRequest("/decisioning.v1.ApiKeyService/CreateApiKey", (b: Buffer) => b, (b: Buffer) => b, request, grpc.Metadata.fromHttp2Headers({ "x-api-key": tenant.apiKey }), resolve),
    );
    native.close();
    assert.equal(status?.code, grpc.status.RESOURCE_EXHAUSTED);
  });

  test("415 for a body that is not JSON, on REST and Connect", async () => {
    const headers = { "content-type": "text/plain", "x-requested-with": "test" };
    const viaRest = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, rawBody: '{"name":"x"}', headers });
    assert.equal(viaRest.status, 415);
    assert.equal(viaRest.body.title, "Unsupported Media Type");
    const viaConnect = await rest(svc.baseUrl, "POST", CREATE_VIA_CONNECT, { key: tenant.apiKey, rawBody: '{"name":"x"}', headers });
    assert.equal(viaConnect.status, 415);
    // A body without any Content-Type (fetch sets none for bytes) is not JSON either; no body needs none.
    const untyped = await fetch(`${svc.baseUrl}/api/v1/api-keys`, {
      method: "POST",
      headers: { "x-api-key": tenant.apiKey, "x-requested-with": "test" },
      body: Buffer.from('{"name":"x"}'),
    });
    assert.equal(untyped.status, 415);
    assert.match(((await untyped.json()) as { detail: string }).detail, /got none/);
    const bodiless = await fetch(`${svc.baseUrl}/api/v1/oauth/clients`, { method: "POST", headers: { "x-api-key": tenant.apiKey, "x-requested-with": "test" } });
    assert.equal(bodiless.status, 201);
  });

  test("413 on a route that takes no body too, and it does nothing", async () => {
    const offer = await rest(svc.baseUrl, "POST", "/api/v1/offers", { key: tenant.apiKey, body: { name: `big-${Date.now()}` } });
    assert.equal(offer.status, 201);
    const big = JSON.stringify({ pad: "x".repeat(2 * 1024 * 1024 + 10) });
    const del = await rest(svc.baseUrl, "DELETE", `/api/v1/offers/${offer.body.id}`, { key: tenant.apiKey, rawBody: big, headers: { "content-type": "application/json" } });
    assert.equal(del.status, 413);
    assert.equal((await rest(svc.baseUrl, "GET", `/api/v1/offers/${offer.body.id}`, { key: tenant.apiKey })).status, 200);
  });
});

describe("gRPC tooling", () => {
  const buf = join(import.meta.dirname, "../../node_modules/.bin/buf");
  const curl = (...args: string[]) => promisify(execFile)(buf, ["curl", "--protocol", "grpc", "--http2-prior-knowledge", ...args]);

  test("server reflection describes the services and the health service (grpcurl and buf curl work)", async () => {
    const methods = (await curl("--list-methods", `http://${svc.grpcAddress}`)).stdout.split("\n");
    assert.ok(methods.includes("decisioning.v1.ApiKeyService/ListApiKeys"));
    assert.ok(methods.includes("grpc.health.v1.Health/Check"));
    const health = JSON.parse((await curl(`http://${svc.grpcAddress}/grpc.health.v1.Health/Check`)).stdout);
    assert.equal(health.status, "SERVING");
    const list = JSON.parse((await curl("-H", `x-api-key: ${tenant.apiKey}`, `http://${svc.grpcAddress}/decisioning.v1.ApiKeyService/ListApiKeys`)).stdout);
    assert.ok(list.total >= 1);
  });

  test("buf curl's defaults work on the HTTP port: Connect over h2c, schema by server reflection", async () => {
    const connectCurl = (...args: string[]) => promisify(execFile)(buf, ["curl", ...args]);
    const services = (await connectCurl("--list-services", `${svc.baseUrl}/api/v1`)).stdout.split("\n");
    assert.ok(services.includes("decisioning.v1.OfferService"));
    assert.ok(services.includes("grpc.reflection.v1.ServerReflection"));
    const list = JSON.parse((await connectCurl("-H", `x-api-key: ${tenant.apiKey}`, "-d", "{}", `${svc.baseUrl}/api/v1/decisioning.v1.ApiKeyService/ListApiKeys`)).stdout);
    assert.ok(list.total >= 1);
    const failed = await connectCurl("-H", `x-api-key: ${tenant.apiKey}`, "-d", "{}", `${svc.baseUrl}/api/v1/decisioning.v1.ApiKeyService/CreateApiKey`).then(
      () => null,
      (err: { stdout: string; stderr: string }) => JSON.parse(err.stdout || err.stderr),
    );
    assert.deepEqual(failed, { code: "invalid_argument", message: "name: is required" });
    // HTTP/1.1 keeps working on the same port.
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey })).status, 200);
  });
});

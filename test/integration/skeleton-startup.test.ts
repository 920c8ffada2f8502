import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { request } from "node:http";
import { startTestService, TEST_INTERNAL_KEY, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "../support/service.js";
import { createTestDatabase, requireEnv } from "../support/database.js";
import { rest } from "../support/clients.js";
import { runCli, runFailingStart, spawnServer } from "../support/server-process.js";
import { freePort } from "../../src/platform/embedded-postgres.js";

/** The environment of an operator's deployment: this file's database and Redis prefix, real secrets. */
let env: Record<string, string>;
/** An in-process server on the same database and Redis prefix, to see what the CLI and other processes did. */
let svc: TestService;

before(async () => {
  const redisKeyPrefix = `test:${randomBytes(6).toString("hex")}:`;
  env = {
    DATABASE_URL: await createTestDatabase(),
    REDIS_URL: requireEnv("TEST_REDIS_URL"),
    REDIS_KEY_PREFIX: redisKeyPrefix,
    API_KEY_PEPPER: TEST_PEPPER,
    JWT_SIGNING_SECRET: TEST_JWT_SECRET,
    API_KEY: TEST_INTERNAL_KEY,
  };
  svc = await startTestService({ redisKeyPrefix }, env.DATABASE_URL);
});
after(() => svc.stop());

/** Runs the CLI, expecting success and exactly one JSON line on stdout. */
async function cli(...args: string[]): Promise<Record<string, any>> {
  const out = await runCli(args, env);
  assert.equal(out.code, 0, out.stderr);
  const lines = out.stdout.split("\n").filter(Boolean);
  assert.equal(lines.length, 1, `one line on stdout, got: ${out.stdout}`);
  return JSON.parse(lines[0]);
}

describe("the bootstrap CLI", () => {
  test("tenant create, user create, disable, enable and set-role, seen at once by a running server", async () => {
    const tenant = await cli("tenant", "create", "--name", "acme");
    assert.deepEqual(Object.keys(tenant).sort(), ["apiKey", "tenantId", "userId"]);
    assert.match(tenant.apiKey, /^krn_[0-9a-f]{64}$/);
    const listKeys = (key: string) => rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key });
    assert.equal((await listKeys(tenant.apiKey)).status, 200, "an admin with a control-plane key");

    const user = await cli("user", "create", "--tenant", tenant.tenantId, "--email", "ana@acme.test", "--role", "admin");
    assert.deepEqual(Object.keys(user).sort(), ["apiKey", "userId"]);
    assert.equal((await listKeys(user.apiKey)).status, 200);

    const changes: Array<[string[], Record<string, unknown>, number]> = [
      [["disable"], { disabled: true, tokenVersion: 2 }, 401],
      [["enable"], { disabled: false, tokenVersion: 3 }, 200],
      [["set-role", "--role", "viewer"], { role: "viewer", tokenVersion: 4 }, 403],
    ];
    for (const [[command, ...rest], expected, status] of changes) {
      const row = await cli("user", command, "--tenant", tenant.tenantId, "--user", user.userId, ...rest);
      for (const [field, value] of Object.entries(expected)) assert.equal(row[field], value, `${command}: ${field}`);
      assert.equal((await listKeys(user.apiKey)).status, status, `${command} reaches the running server at once`);
    }
  });

  test("bad input: usage errors exit 64, refused operations exit 1 with one line on stderr, and nothing is written", async () => {
    const tenant = await cli("tenant", "create", "--name", "beta");
    const args = ["user", "create", "--tenant", tenant.tenantId, "--email", "bo@beta.test"];
    await cli(...args, "--role", "editor");
    const [duplicate, badRole, noName, badLimits] = await Promise.all([
      runCli([...args, "--role", "viewer"], env),
      runCli([...args.slice(0, -1), "cy@beta.test", "--role", "owner"], env),
      runCli(["tenant", "create"], env),
      runCli(["tenant", "set-limits", "--tenant", tenant.tenantId, "--limits", '{"default":{"limit":0}}'], env),
    ]);
    assert.equal(duplicate.code, 1);
    assert.match(duplicate.stderr, /^error: email: bo@beta\.test is already a user of this tenant$/m);
    assert.equal(badRole.code, 64);
    assert.match(badRole.stderr, /--role must be admin, editor or viewer/);
    assert.equal(noName.code, 64);
    const [unknownOption, help] = await Promise.all([runCli(["user", "create", "--bogus", "1"], env), runCli(["--help"], env)]);
    assert.equal(unknownOption.code, 64);
    assert.match(unknownOption.stderr, /^Unknown option '--bogus'/);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^usage:\n  cli --help\n/);
    assert.equal(badLimits.code, 1);
    assert.match(badLimits.stderr, /--limits\.default needs positive integers/);
    const [users] = await svc.running.foundation.db.query(`SELECT email FROM users WHERE tenant_id = '${tenant.tenantId}' ORDER BY email`);
    assert.deepEqual((users as Array<{ email: string }>).map((u) => u.email), ["admin@" + tenant.tenantId + ".local", "bo@beta.test"]);
  });

  test("tenant set-limits overrides the deployment's rate limits for that tenant", async () => {
    const tenant = await cli("tenant", "create", "--name", "gamma");
    const set = await cli("tenant", "set-limits", "--tenant", tenant.tenantId, "--limits", '{"default":{"limit":7,"windowSeconds":60}}');
    assert.deepEqual(set.rateLimits, { default: { limit: 7, windowSeconds: 60 } });
    const res = await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey });
    assert.equal(res.headers.get("x-ratelimit-limit"), "7");
  });
});

describe("the server process", () => {
  test("SIGTERM stops accepting, lets the request in flight finish, closes the pools and exits 0", async () => {
    const { apiKey } = await cli("tenant", "create", "--name", "drain");
    const server = await spawnServer(env);
    const body = JSON.stringify({ name: "made while draining" });
    const response = new Promise<{ status: number; body: any }>((resolve, reject) => {
      const req = request(`${server.baseUrl}/api/v1/api-keys`, {
        method: "POST",
        headers: { "x-api-key": apiKey, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on("error", reject);
      // Half the body now, the rest once the server is draining: the request is in flight throughout.
      req.write(body.slice(0, 10));
      setTimeout(() => {
        server.child.kill("SIGTERM");
        setTimeout(async () => {
          await assert.rejects(fetch(`${server.baseUrl}/healthz`), "no new connections while draining");
          req.end(body.slice(10));
        }, 300);
      }, 300);
    });
    const done = await response;
    assert.equal(done.status, 201);
    assert.equal(done.body.name, "made while draining");
    assert.equal(await server.exited, 0);
    assert.ok(server.logs.some((l) => l.msg === "draining"));
    assert.equal(server.logs.filter((l) => l.level >= 40).length, 0, "nothing failed on the way out (pools closed cleanly)");
  });

  test("a revocation made on one process bites at once on another", async () => {
    const tenant = await svc.createTenant();
    const key = (await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { key: tenant.apiKey, body: { name: "shared", scopes: ["control-plane"] } })).body;
    const server = await spawnServer(env);
    try {
      assert.equal((await rest(server.baseUrl, "GET", "/api/v1/api-keys", { key: key.key })).status, 200, "now cached there");
      assert.equal((await rest(svc.baseUrl, "DELETE", `/api/v1/api-keys?id=${key.id}`, { key: tenant.apiKey, body: { reason: "leaked" } })).status, 204);
      assert.equal((await rest(server.baseUrl, "GET", "/api/v1/api-keys", { key: key.key })).status, 401);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  test("a missing pepper: loud warning at start; authentication, client creation, token issuance and verification answer 503 and write nothing", async () => {
    const tenant = await svc.createTenant();
    const client = (await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: {} })).body;
    const { API_KEY_PEPPER: _, ...withoutPepper } = env;
    const server = await spawnServer(withoutPepper);
    try {
      assert.ok(server.logs.some((l) => l.level >= 40 && l.msg.includes("API_KEY_PEPPER is not set")));
      const byKey = await rest(server.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey });
      assert.equal(byKey.status, 503);
      assert.equal(byKey.headers.get("x-error-reason"), "SECRET_NOT_CONFIGURED");
      assert.match(byKey.body.detail, /API_KEY_PEPPER/);
      const created = await rest(server.baseUrl, "POST", "/api/v1/oauth/clients", {
        key: TEST_INTERNAL_KEY,
        headers: { "x-tenant-id": tenant.tenantId },
        body: { name: "never" },
      });
      assert.equal(created.status, 503);
      const token = await rest(server.baseUrl, "POST", "/api/v1/oauth/token", {
        body: { grant_type: "client_credentials", client_id: client.clientId, client_secret: client.clientSecret },
      });
      assert.equal(token.status, 503);
      assert.equal(token.body.error, "server_error");
      // Spec 5.1 rule 6: token verification fails without the pepper too.
      const issued = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", {
        body: { grant_type: "client_credentials", client_id: client.clientId, client_secret: client.clientSecret },
      });
      const verified = await rest(server.baseUrl, "GET", "/api/v1/alerts", { bearer: issued.body.access_token });
      assert.equal(verified.status, 503);
      assert.equal(verified.headers.get("x-error-reason"), "SECRET_NOT_CONFIGURED");
      const clients = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { key: tenant.apiKey });
      assert.deepEqual(clients.body.data.map((c: any) => c.id), [client.id]);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });

  test("a signing secret under 32 bytes: token issuance, verification and client creation answer 503; API keys still work", async () => {
    const tenant = await svc.createTenant();
    const client = (await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { scopes: ["admin"] } })).body;
    const credentials = { grant_type: "client_credentials", client_id: client.clientId, client_secret: client.clientSecret };
    const server = await spawnServer({ ...env, JWT_SIGNING_SECRET: "too-short" });
    try {
      assert.ok(server.logs.some((l) => l.level >= 40 && l.msg.includes("JWT_SIGNING_SECRET is shorter than 32 bytes")));
      assert.equal((await rest(server.baseUrl, "POST", "/api/v1/oauth/token", { body: credentials })).status, 503);
      const issued = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { body: credentials });
      const verified = await rest(server.baseUrl, "GET", "/api/v1/oauth/clients", { bearer: issued.body.access_token });
      assert.equal(verified.status, 503);
      assert.equal(verified.headers.get("x-error-reason"), "SECRET_NOT_CONFIGURED");
      assert.equal((await rest(server.baseUrl, "GET", "/api/v1/api-keys", { key: tenant.apiKey })).status, 200);
      // Spec 5.1 rule 6: nor is a client created that could never get a token.
      const created = await rest(server.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { name: "never" } });
      assert.equal(created.status, 503);
      assert.match(created.body.detail, /JWT_SIGNING_SECRET/);
      const clients = await rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { key: tenant.apiKey });
      assert.equal(clients.body.data.some((c: any) => c.name === "never"), false);
    } finally {
      server.child.kill("SIGTERM");
      await server.exited;
    }
  });
});

test("a PostgreSQL or Redis it cannot reach stops the start-up with one error line and exit status 1", async () => {
  const closed = await freePort();
  const [noDatabase, noRedis] = await Promise.all([
    runFailingStart({ ...env, DATABASE_URL: `postgres://postgres@127.0.0.1:${closed}/none` }),
    runFailingStart({ ...env, REDIS_URL: `redis://127.0.0.1:${closed}` }),
  ]);
  assert.equal(noDatabase.code, 1);
  assert.match(noDatabase.stderr, /^error: PostgreSQL at DATABASE_URL is unreachable: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/);
  assert.equal(noRedis.code, 1);
  assert.match(noRedis.stderr, /^error: Redis at REDIS_URL is unreachable: [^\n]+\n$/);
});

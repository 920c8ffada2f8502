import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { SignJWT, UnsecuredJWT } from "jose";
import { startTestService, TEST_JWT_SECRET, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { TOKEN_ISSUER } from "../../src/identity/token-signer.js";

let svc: TestService;
let tenant: { tenantId: string; userId: string; apiKey: string };
let client: { clientId: string; clientSecret: string };

before(async () => {
  svc = await startTestService();
  tenant = await svc.createTenant();
  client = (await rest(svc.baseUrl, "POST", "/api/v1/oauth/clients", { key: tenant.apiKey, body: { scopes: ["admin"] } })).body;
});
after(() => svc.stop());

describe("access token verification (spec 4.1): HS256 pinned, issuer and expiry checked", () => {
  const secret = new TextEncoder().encode(TEST_JWT_SECRET);
  const claims = () => ({ tid: tenant.tenantId, role: "admin", scopes: ["admin"] });
  const signed = (alg: string, edit: (jwt: SignJWT) => SignJWT = (j) => j) =>
    edit(new SignJWT(claims()).setProtectedHeader({ alg }).setSubject(client.clientId).setIssuer(TOKEN_ISSUER).setIssuedAt().setExpirationTime("1h")).sign(secret);
  const listClients = (bearer: string) => rest(svc.baseUrl, "GET", "/api/v1/oauth/clients", { bearer });

  test("a token signed here with the listed claims is accepted (the forgeries below differ in one thing each)", async () => {
    assert.equal((await listClients(await signed("HS256"))).status, 200);
  });

  const forgeries: Array<[string, () => Promise<string>, string]> = [
    ["expired", () => signed("HS256", (j) => j.setIssuedAt(Math.floor(Date.now() / 1000) - 7200).setExpirationTime(Math.floor(Date.now() / 1000) - 3600)), "TOKEN_EXPIRED"],
    ["another issuer", () => signed("HS256", (j) => j.setIssuer("someone-else")), "INVALID_TOKEN"],
    ["alg none", async () => new UnsecuredJWT(claims()).setSubject(client.clientId).setIssuer(TOKEN_ISSUER).setIssuedAt().setExpirationTime("1h").encode(), "INVALID_TOKEN"],
    ["another HMAC algorithm with the same secret", () => signed("HS512"), "INVALID_TOKEN"],
    [
      "another secret",
      () => new SignJWT(claims()).setProtectedHeader({ alg: "HS256" }).setSubject(client.clientId).setIssuer(TOKEN_ISSUER).setExpirationTime("1h").sign(new TextEncoder().encode("x".repeat(48))),
      "INVALID_TOKEN",
    ],
  ];
  for (const [name, forge, reason] of forgeries) {
    test(`${name}: 401`, async () => {
      const res = await listClients(await forge());
      assert.equal(res.status, 401);
      assert.equal(res.body.title, "Unauthorized");
      assert.equal(res.headers.get("x-error-reason"), reason);
    });
  }
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { createSecrets } from "../../src/platform/secrets.js";
import { SESSION_LIFETIME_SECONDS, SessionIssuer, sessionTokenOf } from "../../src/sessions/session-issuer.js";
import { TokenSigner } from "../../src/identity/token-signer.js";

const secrets = createSecrets({ apiKeyPepper: "p".repeat(32), jwtSigningSecret: "s".repeat(32) });
const user = { tenantId: "00000000-0000-4000-8000-000000000001", userId: "00000000-0000-4000-8000-000000000002", role: "editor" as const, tokenVersion: 3 };

test("a session round-trips through its cookie and expires after its lifetime", async () => {
  let now = Date.UTC(2026, 0, 1);
  const issuer = new SessionIssuer(secrets, true, () => now);
  const issued = await issuer.issue(user);
  assert.match(issued.setCookie, /HttpOnly/);
  assert.match(issued.setCookie, /SameSite=Lax/);
  assert.match(issued.setCookie, /Secure/);
  const token = sessionTokenOf(`other=1; ${issued.setCookie.split(";")[0]}`);
  assert.equal(token, issued.token);
  const claims = await issuer.verify(token!);
  assert.deepEqual({ ...claims, expiresAt: undefined, sid: undefined }, { ...user, expiresAt: undefined, sid: undefined });
  assert.equal(claims!.sid, issued.sid);
  now += (SESSION_LIFETIME_SECONDS + 1) * 1000;
  assert.equal(await issuer.verify(token!), null);
});

test("a plain-HTTP operator gets no Secure flag, and an access token is never a session", async () => {
  const issuer = new SessionIssuer(secrets, false);
  assert.doesNotMatch((await issuer.issue(user)).setCookie, /Secure/);
  const accessToken = await new TokenSigner(secrets).sign({ sub: user.userId, tid: user.tenantId, role: "admin", scopes: ["admin"] });
  assert.equal(await issuer.verify(accessToken), null);
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";
import { auth, sessionClaims, sessionCookie } from "../support/session-client.js";
import { hashPassword } from "../../src/sessions/password-hasher.js";

const PASSWORD = "Across-Processes-1";

let svc: TestService;
let child: ChildService;
let tenantId: string;

/** A verified user with a password in `tenantId` (set directly: the mail round trip is sessions.test.ts's). */
async function person(role: "admin" | "editor" | "viewer"): Promise<{ userId: string; email: string }> {
  const email = `${role}-${Math.random().toString(36).slice(2)}@example.com`;
  const { userId } = await svc.identity.createUser(tenantId, email, role);
  await svc.sql("UPDATE users SET password_hash = $3, email_verified_at = now() WHERE tenant_id = $1 AND id = $2", [tenantId, userId, await hashPassword(PASSWORD)]);
  return { userId, email };
}

async function signIn(email: string): Promise<string> {
  const res = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return sessionCookie(res)!;
}

const offersOn = (baseUrl: string, cookie: string) => rest(baseUrl, "GET", "/api/v1/offers", { headers: { cookie } });

before(async () => {
  svc = await startTestService();
  child = await startChildService(svc);
  tenantId = (await svc.createTenant("two processes")).tenantId;
});

after(async () => {
  await child?.stop();
  await svc?.stop();
});

test("a role change made on one process ends the session on another at once (well within the 30-second liveness bound)", async () => {
  const { userId, email } = await person("editor");
  const cookie = await signIn(email);
  assert.equal((await offersOn(child.baseUrl, cookie)).status, 200, "the other process accepts the cookie and caches the user");
  const started = Date.now();
  await svc.identity.updateUser(tenantId, userId, { role: "viewer" });
  const refused = await offersOn(child.baseUrl, cookie);
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("x-error-reason"), "SESSION_ENDED");
  assert.equal(refused.body.title, "Unauthorized");
  assert.ok(Date.now() - started < 30_000);
  // A new session carries the new role on both processes.
  const fresh = await signIn(email);
  assert.equal((await offersOn(child.baseUrl, fresh)).status, 200);
  const session = await auth(child.baseUrl, "GET", "/api/auth/session", undefined, fresh);
  assert.equal(session.body.role, "viewer");
});

test("disabling a user ends their session on the other process", async () => {
  const { userId, email } = await person("admin");
  const cookie = await signIn(email);
  assert.equal((await offersOn(child.baseUrl, cookie)).status, 200);
  await svc.identity.updateUser(tenantId, userId, { disabled: true });
  const refused = await offersOn(child.baseUrl, cookie);
  assert.equal(refused.status, 401);
  assert.equal(refused.headers.get("x-error-reason"), "USER_INACTIVE");
  const signIn403 = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD });
  assert.equal(signIn403.status, 403);
  assert.equal(signIn403.headers.get("x-error-reason"), "USER_DISABLED");
});

test("a cookie signed out on one process is refused when replayed on another", async () => {
  const { email } = await person("viewer");
  const cookie = await signIn(email);
  assert.equal((await offersOn(child.baseUrl, cookie)).status, 200);
  assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-out", {}, cookie)).status, 204);
  const replay = await offersOn(child.baseUrl, cookie);
  assert.equal(replay.status, 401);
  assert.equal(replay.headers.get("x-error-reason"), "SESSION_ENDED");
  const ttl = await svc.running.foundation.redis!.pttl(`t:{${tenantId}}:session:revoked:${sessionClaims(cookie).sid}`);
  assert.ok(ttl > 29 * 60_000 && ttl <= 30 * 60_000, `the revocation lives one session lifetime, ${ttl} ms`);
});

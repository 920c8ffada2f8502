import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { postFrom, rest } from "../support/clients.js";
import { putPlatformEmailSettings, startSmtpServer } from "../support/outbound-receivers.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.js";
import { auth, linkToken, sessionClaims, sessionCookie, waitForMail } from "../support/session-client.js";

const SETTINGS_KEY = { id: "k1", secret: "sessions-test-settings-key-0123456789abcdef" };
const OUTBOUND = { allowPrivate: true, maxAttempts: 2, backoffMs: 20, backoffMaxMs: 50, timeoutMs: 3000 };
const PASSWORD = "Correct-Horse-1";
const MINUTE = 60_000;

let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
let svc: TestService;
/** The service's clock runs this far ahead of the wall clock (ServiceOptions.now). */
let offset = 0;
let n = 0;
const address = (label: string) => `${label}-${++n}-${process.pid}@example.com`;

async function register(email: string, name = "Ada Lovelace", extra: Record<string, unknown> = {}) {
  return auth(svc.baseUrl, "POST", "/api/auth/register", { name, email, password: PASSWORD, ...extra });
}

/** Registers, follows the mailed link with a POST, and signs in: the cookie and the sign-in answer. */
async function signedUp(email: string, name = "Ada Lovelace") {
  assert.equal((await register(email, name)).status, 201);
  const { token } = linkToken(await waitForMail(smtp.mails, email, /Verify/));
  assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/verify-email", { token })).status, 200);
  const res = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { cookie: sessionCookie(res)!, body: res.body };
}

before(async () => {
  smtp = await startSmtpServer("mailer", "smtp-secret-pass");
  svc = await startTestService(
    {
      outbound: OUTBOUND,
      settingsKeys: [SETTINGS_KEY],
      // Every call of this file comes from 127.0.0.1: its source windows are widened, the address windows kept small to be tested.
      rateLimits: {
        auth_sign_in_source: { limit: 10_000, windowSeconds: 60 },
        auth_mail_source: { limit: 10_000, windowSeconds: 60 },
        auth_token: { limit: 10_000, windowSeconds: 60 },
        auth_sign_in: { limit: 5, windowSeconds: 300 },
        auth_mail: { limit: 3, windowSeconds: 3600 },
      },
    },
    undefined,
    undefined,
    { now: () => Date.now() + offset },
  );
  const owner = await svc.identity.createTenant("platform", { platformOwner: true });
  const put = await putPlatformEmailSettings(svc.baseUrl, owner.apiKey, smtp.port, "accounts@decisioning.example");
  assert.equal(put.status, 200, JSON.stringify(put.body));
});

after(async () => {
  await svc?.stop();
  await smtp?.close();
});

describe("registration and e-mail verification", () => {
  test("register creates a personal tenant owned by an admin, hashes with argon2id, and mails a link that a GET shows without using", async () => {
    const email = address("ada");
    const res = await register(email.toUpperCase());
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(res.body, { email, verificationRequired: true });
    const [user] = await svc.sql("SELECT u.*, t.name AS tenant_name FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.email = $1", [email]);
    assert.equal(user.role, "admin");
    assert.equal(user.tenant_name, "Ada Lovelace's Workspace");
    assert.equal(user.email_verified_at, null);
    assert.match(user.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    const [audit] = await svc.sql("SELECT * FROM audit_log WHERE tenant_id = $1 AND entity_type = 'tenant'", [user.tenant_id]);
    assert.equal(audit.action, "create");

    const mail = await waitForMail(smtp.mails, email, /Verify your e-mail address/);
    assert.equal(mail.from?.text, "accounts@decisioning.example");
    const { link, token } = linkToken(mail);
    assert.equal(link, `${svc.config.publicUrl}/api/auth/verify-email?token=${token}`);
    assert.equal(svc.config.publicUrl, "http://localhost:8080");

    // Unverified: the right password is refused with a reason.
    const early = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD });
    assert.equal(early.status, 403);
    assert.equal(early.headers.get("x-error-reason"), "EMAIL_NOT_VERIFIED");
    assert.match(early.body.detail, /not verified/);

    // Mail scanners prefetch links: a GET shows a page with a button and uses nothing.
    for (let i = 0; i < 2; i++) {
      const page = await fetch(`${svc.baseUrl}/api/auth/verify-email?token=${token}`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type")!, /text\/html/);
      assert.equal(page.headers.get("cache-control"), "no-store");
      const html = await page.text();
      assert.match(html, /<form method="post" action="\/api\/auth\/verify-email">/);
      assert.ok(html.includes(`value="${token}"`));
    }
    const [stored] = await svc.sql("SELECT used_at FROM auth_tokens WHERE user_id = $1", [user.id]);
    assert.equal(stored.used_at, null);

    // The page's button: a form post, answered with a page.
    const posted = await fetch(`${svc.baseUrl}/api/auth/verify-email`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token }).toString(),
    });
    assert.equal(posted.status, 200);
    assert.match(await posted.text(), /verified/);
    const again = await auth(svc.baseUrl, "POST", "/api/auth/verify-email", { token });
    assert.equal(again.status, 400);
    assert.equal(again.headers.get("x-error-reason"), "LINK_USED");
    const unknown = await auth(svc.baseUrl, "POST", "/api/auth/verify-email", { token: "x".repeat(43) });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.headers.get("x-error-reason"), "LINK_INVALID");
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD })).status, 200);
  });

  test("a verification link expires after 24 hours (400), and a custom tenant name is kept", async () => {
    const email = address("late");
    assert.equal((await register(email, "Grace", { tenantName: "Hopper Labs" })).status, 201);
    const [row] = await svc.sql("SELECT t.name FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.email = $1", [email]);
    assert.equal(row.name, "Hopper Labs");
    const { token } = linkToken(await waitForMail(smtp.mails, email, /Verify/));
    offset += 24 * 60 * MINUTE + MINUTE;
    try {
      const res = await auth(svc.baseUrl, "POST", "/api/auth/verify-email", { token });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get("x-error-reason"), "LINK_EXPIRED");
    } finally {
      offset = 0;
    }
  });

  test("weak passwords, malformed addresses and over-long names are 400 naming each failure, and write nothing", async () => {
    const [{ count: before }] = await svc.sql("SELECT count(*)::int AS count FROM tenants");
    const weak = await auth(svc.baseUrl, "POST", "/api/auth/register", { name: "A", email: address("weak"), password: "abc" });
    assert.equal(weak.status, 400);
    assert.match(weak.body.detail, /password: must be at least 8 characters/);
    assert.match(weak.body.detail, /password: must contain at least one upper-case letter/);
    assert.match(weak.body.detail, /password: must contain at least one digit/);
    const noDigit = await register(address("nd"), "A", { password: "NoDigitsHere" });
    assert.equal(noDigit.status, 400);
    assert.equal(noDigit.body.detail, "password: must contain at least one digit");
    const noUpper = await register(address("nu"), "A", { password: "lowercase123" });
    assert.equal(noUpper.body.detail, "password: must contain at least one upper-case letter");
    for (const email of ["not-an-email", "a@b", "a b@example.com", "a@@example.com", `${"x".repeat(250)}@example.com`, 42]) {
      const res = await register(email as string);
      assert.equal(res.status, 400, String(email));
      assert.match(res.body.detail, /^email: /, String(email));
    }
    const longName = await register(address("long"), "n".repeat(101));
    assert.equal(longName.status, 400);
    assert.equal(longName.body.detail, "name: must be at most 100 characters");
    const longTenant = await register(address("long"), "Ok", { tenantName: "t".repeat(101) });
    assert.equal(longTenant.body.detail, "tenantName: must be at most 100 characters");
    const missing = await auth(svc.baseUrl, "POST", "/api/auth/register", {});
    assert.equal(missing.body.detail, "name: is required; email: is required; password: is required");
    const form = await rest(svc.baseUrl, "POST", "/api/auth/register", { rawBody: "name=a", headers: { "content-type": "application/x-www-form-urlencoded" } });
    assert.equal(form.status, 415);
    const [{ count: afterCount }] = await svc.sql("SELECT count(*)::int AS count FROM tenants");
    assert.equal(afterCount, before);
  });

  test("registering a taken address answers like a fresh one, creates nothing, and mails the owner instead", async () => {
    const email = address("taken");
    await signedUp(email);
    const [{ count: before }] = await svc.sql("SELECT count(*)::int AS count FROM tenants");
    const again = await register(email, "Mallory");
    assert.equal(again.status, 201);
    assert.deepEqual(again.body, { email, verificationRequired: true });
    const [{ count: afterCount }] = await svc.sql("SELECT count(*)::int AS count FROM tenants");
    assert.equal(afterCount, before);
    const mail = await waitForMail(smtp.mails, email, /already have an account/);
    assert.doesNotMatch(mail.text!, /token=/);
  });

  test("parallel registrations of one address create exactly one account", async () => {
    const email = address("race");
    const answers = await Promise.all([1, 2, 3].map(() => register(email)));
    assert.deepEqual(answers.map((a) => a.status), [201, 201, 201]);
    const rows = await svc.sql("SELECT id FROM users WHERE email = $1", [email]);
    assert.equal(rows.length, 1);
    // The two later attempts find an unverified account: its owner gets fresh links, not a second account.
    for (let i = 0; i < 3; i++) await waitForMail(smtp.mails, email, /Verify/);
  });
});

describe("sign-in and the session cookie", () => {
  test("sign-in sets an HttpOnly, SameSite=Lax cookie (not Secure on a loopback http PUBLIC_URL) and GET /api/auth/session says who", async () => {
    const email = address("who");
    const { cookie, body } = await signedUp(email, "Who Ami");
    assert.equal(body.user.email, email);
    assert.equal(body.role, "admin");
    assert.equal(body.tenant.name, "Who Ami's Workspace");
    const expiresIn = Date.parse(body.expiresAt) - Date.now();
    assert.ok(expiresIn > 29 * MINUTE && expiresIn <= 30 * MINUTE, String(expiresIn));
    const res = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD });
    const setCookie = res.headers.get("set-cookie")!;
    assert.match(setCookie, /^ds_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=1800$/);

    const session = await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, cookie);
    assert.equal(session.status, 200);
    assert.deepEqual(session.body.user, body.user);
    assert.deepEqual(session.body.tenant, body.tenant);
    assert.equal(session.body.role, "admin");
    assert.equal(session.body.expiresAt, body.expiresAt);
    assert.equal(session.headers.get("set-cookie"), null, "no renewal in the first half");
    const none = await auth(svc.baseUrl, "GET", "/api/auth/session");
    assert.equal(none.status, 401);
    assert.equal(none.body.title, "Unauthorized");
    const forged = await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, `${cookie.slice(0, -4)}AAAA`);
    assert.equal(forged.status, 401);
  });

  test("a wrong password and an unknown address get the same 401, and the unknown address is not answered faster", async () => {
    const email = address("timing");
    await signedUp(email);
    const wrong = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: "Wrong-Password-1" });
    const unknown = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email: address("nobody"), password: "Wrong-Password-1" });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    assert.deepEqual({ ...wrong.body, requestId: null }, { ...unknown.body, requestId: null });
    assert.equal(wrong.headers.get("x-error-reason"), unknown.headers.get("x-error-reason"));
    assert.deepEqual([wrong.headers.get("cache-control"), unknown.headers.get("cache-control")], ["no-store", "no-store"], "refusals are not cached either");
    const time = async (body: object) => {
      const started = performance.now();
      await auth(svc.baseUrl, "POST", "/api/auth/sign-in", body);
      return performance.now() - started;
    };
    // Interleaved, best of six each: other test files share the two cores, and the fastest of each
    // kind is the one least disturbed by them, whichever moment the disturbance came at. Two accounts
    // take the wrong passwords, so that neither reaches this file's per-address limit (5 per 300 s).
    const second = address("timing");
    await signedUp(second);
    let unknownMs = Infinity;
    let wrongMs = Infinity;
    for (let i = 0; i < 6; i++) {
      unknownMs = Math.min(unknownMs, await time({ email: address("ghost"), password: "Wrong-Password-1" }));
      wrongMs = Math.min(wrongMs, await time({ email: i % 2 ? email : second, password: "Wrong-Password-2" }));
    }
    // Both pay one argon2id verification; without the dummy hash the unknown address would answer in ~1 ms.
    assert.ok(unknownMs > wrongMs * 0.5, `unknown ${unknownMs.toFixed(1)} ms vs wrong ${wrongMs.toFixed(1)} ms`);
  });

  test("the cookie reaches control-plane REST and Connect routes with the user's role, and the data plane", async () => {
    const { cookie, body } = await signedUp(address("planes"));
    const offers = await rest(svc.baseUrl, "GET", "/api/v1/offers", { headers: { cookie } });
    assert.equal(offers.status, 200, JSON.stringify(offers.body));
    // An admin-only route: a session mints an API key as its user.
    const key = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { body: { name: "from a session" }, headers: { cookie } });
    assert.equal(key.status, 201, JSON.stringify(key.body));
    const connect = await fetch(`${svc.baseUrl}/api/v1/decisioning.v1.ApiKeyService/ListApiKeys`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(connect.status, 200);
    assert.equal(((await connect.json()) as { data: unknown[] }).data.length, 1);
    const recommend = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { body: { customerId: "cust-1" }, headers: { cookie } });
    assert.equal(recommend.status, 200, JSON.stringify(recommend.body));
    // A role change ends the session; the next one carries the new role, which the routes enforce.
    await svc.identity.updateUser(body.tenant.id, body.user.id, { role: "viewer" });
    const ended = await rest(svc.baseUrl, "GET", "/api/v1/offers", { headers: { cookie } });
    assert.equal(ended.status, 401, "a role change ends the session");
    assert.equal(ended.headers.get("x-error-reason"), "SESSION_ENDED");
    const again = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email: body.user.email, password: PASSWORD });
    const viewer = sessionCookie(again)!;
    assert.equal(sessionClaims(viewer).role, "viewer");
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/offers", { headers: { cookie: viewer } })).status, 200);
    const denied = await rest(svc.baseUrl, "POST", "/api/v1/api-keys", { body: { name: "no" }, headers: { cookie: viewer } });
    assert.equal(denied.status, 403);
    assert.equal(denied.headers.get("x-error-reason"), "INSUFFICIENT_ROLE");
  });

  test("CSRF: a state-changing cookie request needs JSON or X-Requested-With, and a cross-site one never carries the cookie", async () => {
    const { cookie } = await signedUp(address("csrf"));
    const post = (headers: Record<string, string>, body = '{"name":"x"}') => rest(svc.baseUrl, "POST", "/api/v1/api-keys", { rawBody: body, headers: { cookie, ...headers } });
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const res = await post({ "content-type": type });
      assert.equal(res.status, 403, type);
      assert.equal(res.headers.get("x-error-reason"), "CSRF_GUARD");
    }
    const crossSite = await post({ "content-type": "application/json", "sec-fetch-site": "cross-site" });
    assert.equal(crossSite.status, 403);
    assert.equal(crossSite.headers.get("x-error-reason"), "CSRF_GUARD");
    assert.equal((await post({ "content-type": "application/json", "sec-fetch-site": "same-origin" })).status, 201);
    // X-Requested-With passes the guard (the REST door then wants JSON: 415, not 403).
    assert.equal((await post({ "content-type": "text/plain", "x-requested-with": "XMLHttpRequest" })).status, 415);
    // Sign-out is cookie-authenticated too.
    const signOut = await rest(svc.baseUrl, "POST", "/api/auth/sign-out", { headers: { cookie } });
    assert.equal(signOut.status, 403);
    assert.equal((await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, cookie)).status, 200, "the refused sign-out ended nothing");
    // Reads are not state-changing, and the token endpoint (public) ignores the cookie.
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/api-keys", { headers: { cookie } })).status, 200);
    const token = await rest(svc.baseUrl, "POST", "/api/v1/oauth/token", { rawBody: "grant_type=client_credentials", headers: { cookie, "content-type": "application/x-www-form-urlencoded" } });
    assert.equal(token.status, 400);
  });

  test("renewal in the second half keeps the sid; an unrenewed cookie expires after 30 minutes", async () => {
    const { cookie } = await signedUp(address("renew"));
    const first = sessionClaims(cookie);
    try {
      offset += 16 * MINUTE;
      const renewed = await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, cookie);
      assert.equal(renewed.status, 200);
      const next = sessionCookie(renewed);
      assert.ok(next, "a request in the second half gets a fresh cookie");
      const claims = sessionClaims(next);
      assert.equal(claims.sid, first.sid);
      assert.ok(claims.exp >= first.exp + 15 * 60, `${claims.exp} vs ${first.exp}`);
      assert.equal(renewed.body.expiresAt, new Date(claims.exp * 1000).toISOString());
      // Renewal on a generated route too.
      const rest16 = await rest(svc.baseUrl, "GET", "/api/v1/offers", { headers: { cookie } });
      assert.ok(sessionCookie(rest16));

      offset += 16 * MINUTE; // 32 minutes after sign-in
      const old = await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, cookie);
      assert.equal(old.status, 401);
      assert.equal(old.headers.get("x-error-reason"), "SESSION_INVALID");
      assert.equal((await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, next)).status, 200);
      offset += 31 * MINUTE;
      assert.equal((await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, next)).status, 401);
    } finally {
      offset = 0;
    }
  });

  test("sign-out clears the cookie and a replayed copy is refused", async () => {
    const { cookie } = await signedUp(address("bye"));
    const out = await auth(svc.baseUrl, "POST", "/api/auth/sign-out", {}, cookie);
    assert.equal(out.status, 204);
    assert.match(out.headers.get("set-cookie")!, /^ds_session=; .*Max-Age=0/);
    const replay = await rest(svc.baseUrl, "GET", "/api/v1/offers", { headers: { cookie } });
    assert.equal(replay.status, 401);
    assert.equal(replay.headers.get("x-error-reason"), "SESSION_ENDED");
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-out", {})).status, 204, "signing out without a session is harmless");
  });

  test("one address in two tenants: sign-in takes tenantId, else the membership used last", async () => {
    const email = address("multi");
    const { body: home } = await signedUp(email);
    const other = await svc.createTenant("Second workspace");
    await svc.identity.createUser(other.tenantId, email, "viewer", "Ada in B");
    // The second membership gets its password through a reset link, like any user the CLI created.
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/password-reset", { email })).status, 202);
    const mails = [await waitForMail(smtp.mails, email, /Reset/), await waitForMail(smtp.mails, email, /Reset/)];
    const forB = mails.find((m) => m.text!.includes('"Second workspace"'))!;
    assert.ok(forB, "each membership gets a link naming its workspace");
    const confirm = await auth(svc.baseUrl, "POST", "/api/auth/password-reset/confirm", { token: linkToken(forB).token, password: "Other-Pass-2" });
    assert.equal(confirm.status, 200, JSON.stringify(confirm.body));

    // Without tenantId: the membership used last (home), whose password differs.
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: "Other-Pass-2" })).status, 401);
    const inB = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: "Other-Pass-2", tenantId: other.tenantId });
    assert.equal(inB.status, 200);
    assert.equal(inB.body.tenant.id, other.tenantId);
    assert.equal(inB.body.role, "viewer");
    const latest = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: "Other-Pass-2" });
    assert.equal(latest.status, 200);
    assert.equal(latest.body.tenant.id, other.tenantId);
    const home2 = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD, tenantId: home.tenant.id });
    assert.equal(home2.body.tenant.id, home.tenant.id);
    const bad = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email: address("bad"), password: PASSWORD, tenantId: "nope" });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.detail, "tenantId: must be a tenant id (a UUID)");
  });
});

describe("password reset", () => {
  test("a reset link is single use, ends existing sessions, and an unknown address gets the same answer", async () => {
    const email = address("reset");
    const { cookie } = await signedUp(email);
    const known = await auth(svc.baseUrl, "POST", "/api/auth/password-reset", { email });
    const unknown = await auth(svc.baseUrl, "POST", "/api/auth/password-reset", { email: address("nobody") });
    assert.equal(known.status, 202);
    assert.deepEqual([unknown.status, unknown.body], [known.status, known.body]);
    const { link, token } = linkToken(await waitForMail(smtp.mails, email, /Reset your password/));
    assert.equal(link, `${svc.config.publicUrl}/api/auth/password-reset/confirm?token=${token}`);
    const page = await fetch(`${svc.baseUrl}/api/auth/password-reset/confirm?token=${token}`);
    assert.match(await page.text(), /type="password"/);

    const weak = await auth(svc.baseUrl, "POST", "/api/auth/password-reset/confirm", { token, password: "weak" });
    assert.equal(weak.status, 400);
    assert.match(weak.body.detail, /^password: must be at least 8 characters/);
    const done = await auth(svc.baseUrl, "POST", "/api/auth/password-reset/confirm", { token, password: "Brand-New-Pass-3" });
    assert.equal(done.status, 200, "a weak password did not use the token up");
    const reused = await auth(svc.baseUrl, "POST", "/api/auth/password-reset/confirm", { token, password: "Brand-New-Pass-4" });
    assert.equal(reused.status, 400);
    assert.equal(reused.headers.get("x-error-reason"), "LINK_USED");

    const old = await auth(svc.baseUrl, "GET", "/api/auth/session", undefined, cookie);
    assert.equal(old.status, 401, "the reset bumped tokenVersion");
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD })).status, 401);
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: "Brand-New-Pass-3" })).status, 200);
  });

  test("a reset link expires after 60 minutes", async () => {
    const email = address("reset-late");
    await signedUp(email);
    await auth(svc.baseUrl, "POST", "/api/auth/password-reset", { email });
    const { token } = linkToken(await waitForMail(smtp.mails, email, /Reset/));
    offset += 61 * MINUTE;
    try {
      const res = await auth(svc.baseUrl, "POST", "/api/auth/password-reset/confirm", { token, password: "Brand-New-Pass-3" });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get("x-error-reason"), "LINK_EXPIRED");
    } finally {
      offset = 0;
    }
  });
});

describe("rate limits", () => {
  test("sign-in per address: the sixth attempt in five minutes is 429, even with the right password", async () => {
    const email = address("brute");
    await signedUp(email); // one attempt
    for (let i = 0; i < 4; i++) assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email, password: `Guess-${i}-Aa` })).status, 401);
    const limited = await auth(svc.baseUrl, "POST", "/api/auth/sign-in", { email: email.toUpperCase(), password: PASSWORD });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get("retry-after")) > 0);
    assert.equal(limited.body.error, "Too Many Requests");
  });

  test("reset mails per address: the fourth request in an hour is 429, known address or not", async () => {
    const email = address("bomb");
    for (let i = 0; i < 3; i++) assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/password-reset", { email })).status, 202);
    assert.equal((await auth(svc.baseUrl, "POST", "/api/auth/password-reset", { email })).status, 429);
  });
});

describe("a deployment with REGISTRATION=off, tight source limits, and a Redis that goes away", () => {
  let redis: PrivateRedis;
  let closed: TestService;

  before(async () => {
    redis = await startPrivateRedis();
    closed = await startTestService(
      {
        registrationEnabled: false,
        redisUrl: redis.url,
        rateLimits: { auth_sign_in_source: { limit: 3, windowSeconds: 60 }, auth_mail_source: { limit: 2, windowSeconds: 60 } },
      },
      svc.config.databaseUrl!,
    );
  });

  after(async () => {
    await closed?.stop();
    await redis?.stop().catch(() => {});
  });

  test("self-registration is refused with 403, while the CLI's tenant creation still works", async () => {
    const res = await auth(closed.baseUrl, "POST", "/api/auth/register", { name: "A", email: address("off"), password: PASSWORD });
    assert.equal(res.status, 403);
    assert.equal(res.headers.get("x-error-reason"), "REGISTRATION_DISABLED");
    assert.ok((await closed.createTenant("by the cli")).tenantId);
  });

  test("sign-in and reset per source address: other addresses of the same source are refused, another source is not", async () => {
    for (let i = 0; i < 3; i++) assert.equal((await postFrom("127.0.0.3", closed.baseUrl, "/api/auth/sign-in", { email: address("spray"), password: "Wrong-Pass-1" })).status, 401);
    assert.equal((await postFrom("127.0.0.3", closed.baseUrl, "/api/auth/sign-in", { email: address("spray"), password: "Wrong-Pass-1" })).status, 429);
    assert.equal((await postFrom("127.0.0.4", closed.baseUrl, "/api/auth/sign-in", { email: address("spray"), password: "Wrong-Pass-1" })).status, 401);
    for (let i = 0; i < 2; i++) assert.equal((await postFrom("127.0.0.3", closed.baseUrl, "/api/auth/password-reset", { email: address("r") })).status, 202);
    assert.equal((await postFrom("127.0.0.3", closed.baseUrl, "/api/auth/password-reset", { email: address("r") })).status, 429);
  });

  test("without Redis, sign-in fails closed (503) and a session cookie is refused (401)", async () => {
    const email = address("closed");
    await signedUp(email); // on the main service, same database
    const res = await auth(closed.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD }, null);
    assert.equal(res.status, 200, "the source window of 127.0.0.1 is its own");
    const cookie = sessionCookie(res)!;
    assert.equal((await auth(closed.baseUrl, "GET", "/api/auth/session", undefined, cookie)).status, 200);
    await redis.stop();
    try {
      const limited = await auth(closed.baseUrl, "POST", "/api/auth/sign-in", { email, password: PASSWORD });
      assert.equal(limited.status, 503);
      assert.equal(limited.headers.get("x-error-reason"), "RATE_LIMITER_UNAVAILABLE");
      const session = await auth(closed.baseUrl, "GET", "/api/auth/session", undefined, cookie);
      assert.equal(session.status, 401);
      assert.equal(session.headers.get("x-error-reason"), "LIVENESS_CHECK_FAILED");
    } finally {
      // Back, so that the service stops cleanly and after() has a server to stop.
      await redis.start();
    }
  });
});

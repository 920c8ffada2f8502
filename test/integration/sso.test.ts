import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { startOpenIdProvider, type TestClient, type TestOpenIdProvider } from "../support/openid-provider.js";
import { SessionIssuer, sessionTokenOf } from "../../src/sessions/session-issuer.js";
import { createSecrets } from "../../src/platform/secrets.js";
import { newId } from "../../src/platform/ids.js";
import { createLogger } from "../../src/platform/logger.js";
import { loadConfig } from "../../src/config.js";
import { startPrivateRedis } from "../support/private-redis.js";

const SETTINGS_KEY = { id: "k1", secret: "sso-settings-key-0123456789abcdef0123" };
/** Where a console page would receive the provider's redirect and hand code and state to the callback. */
const APP_REDIRECT = "http://localhost/app/sso/callback";
const PUBLIC_URL = "http://sso.test";
const CLIENT_A: TestClient = { clientId: "client-a", clientSecret: "secret-a-0123456789", redirectUris: [APP_REDIRECT, `${PUBLIC_URL}/api/v1/sso/callback`] };
const CLIENT_B: TestClient = { clientId: "client-b", clientSecret: "secret-b-0123456789", redirectUris: [APP_REDIRECT] };
const GLOBAL_CLIENT: TestClient = { clientId: "service", clientSecret: "secret-service-0123456789", redirectUris: [`${PUBLIC_URL}/api/auth/callback/oidc`] };

const sessions = new SessionIssuer(createSecrets({ apiKeyPepper: TEST_PEPPER, jwtSigningSecret: TEST_JWT_SECRET }), false);

describe("sign-in through identity providers (spec 2.12, 4.19, 5.5)", () => {
  let idp: TestOpenIdProvider;
  let svc: TestService;
  let tenant: { tenantId: string; userId: string; apiKey: string };
  /** Every line the service logs, at debug level. */
  const logged: string[] = [];

  const configure = (key: string, config: Record<string, unknown>) => rest(svc.baseUrl, "POST", "/api/v1/sso", { key, body: { action: "configure", config } });
  const authUrl = (key: string, body: Record<string, unknown> = {}) =>
    rest(svc.baseUrl, "POST", "/api/v1/sso", { key, body: { action: "get_auth_url", redirectUri: APP_REDIRECT, ...body } });
  const callback = (query: URLSearchParams | string) => rest(svc.baseUrl, "GET", `/api/v1/sso/callback?${query}`);
  /** The whole tenant flow: auth URL, the provider's login as `login`, the callback with what it sent back. */
  async function tenantSignIn(key: string, login: string) {
    const made = await authUrl(key);
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const back = await idp.signIn(made.body.authUrl, login);
    return { back, res: await callback(back.searchParams) };
  }
  const usersWithEmail = (tenantId: string, email: string) => svc.sql("SELECT * FROM users WHERE tenant_id = $1 AND lower(email) = lower($2)", [tenantId, email]);

  before(async () => {
    idp = await startOpenIdProvider([CLIENT_A, CLIENT_B, GLOBAL_CLIENT]);
    svc = await startTestService(
      {
        settingsKeys: [SETTINGS_KEY],
        outbound: { ...loadConfig({}).outbound, allowPrivate: true },
        publicUrl: PUBLIC_URL,
        // This file signs in more than 30 times a minute from one address; the limit itself is tested on a service of its own below.
        rateLimits: { sso_callback: { limit: 1000, windowSeconds: 60 } },
        authOidc: { issuer: idp.issuer, clientId: GLOBAL_CLIENT.clientId, clientSecret: GLOBAL_CLIENT.clientSecret },
      },
      undefined,
      createLogger("debug", { write: (line: string) => void logged.push(line) }),
    );
    tenant = await svc.createTenant("acme");
    const res = await configure(tenant.apiKey, {
      provider: "oidc",
      oidcIssuer: idp.issuer,
      oidcClientId: CLIENT_A.clientId,
      oidcClientSecret: CLIENT_A.clientSecret,
      autoProvision: true,
      defaultRole: "editor",
      allowedDomains: ["acme.example"],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { success: true, message: "SSO configuration saved and active" });
  });
  after(async () => {
    await svc?.stop();
    await idp?.close();
  });

  test("GET shows the configuration without its secret; an unconfigured tenant reads {configured: false, provider: none}", async () => {
    const got = await rest(svc.baseUrl, "GET", "/api/v1/sso", { key: tenant.apiKey });
    assert.equal(got.status, 200);
    assert.equal(got.body.configured, true);
    assert.equal(got.body.provider, "oidc");
    assert.equal(got.body.oidcClientId, "client-a");
    assert.equal(got.body.oidcScopes, "openid email profile");
    assert.deepEqual(got.body.allowedDomains, ["acme.example"]);
    assert.equal(got.body.active, true);
    assert.equal(got.body.oidcClientSecretSet, true);
    assert.ok(!("oidcClientSecret" in got.body));
    assert.ok(!JSON.stringify(got.body).includes(CLIENT_A.clientSecret));
    const [row] = await svc.sql("SELECT oidc_client_secret FROM sso_configs WHERE tenant_id = $1", [tenant.tenantId]);
    assert.ok(row.oidc_client_secret && !row.oidc_client_secret.includes(CLIENT_A.clientSecret), "stored encrypted");
    const audit = await svc.sql("SELECT before, after, changes FROM audit_log WHERE tenant_id = $1 AND entity_type = 'sso_config'", [tenant.tenantId]);
    assert.equal(audit.length, 1);
    assert.ok(!JSON.stringify(audit).includes(CLIENT_A.clientSecret), "the audit log never holds the secret");

    const other = await svc.createTenant();
    const empty = await rest(svc.baseUrl, "GET", "/api/v1/sso", { key: other.apiKey });
    assert.deepEqual(empty.body, { configured: false, provider: "none" });
  });

  test("admin only: an editor gets 403 on GET and POST", async () => {
    const editor = await svc.createUser(tenant.tenantId, "editor");
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/sso", { key: editor.apiKey })).status, 403);
    assert.equal((await configure(editor.apiKey, { enabled: false })).status, 403);
    assert.equal((await authUrl(editor.apiKey)).status, 403);
  });

  test("configure and get_auth_url validation: 400 naming each field, nothing stored", async () => {
    const other = await svc.createTenant();
    const bad = await configure(other.apiKey, {
      provider: "ldap",
      oidcIssuer: "ftp://idp.example",
      oidcScopes: "email profile",
      defaultRole: "owner",
      allowedDomains: ["acme.example", "not a domain", 7],
    });
    assert.equal(bad.status, 400);
    const fields = bad.body.errors.map((e: { field: string }) => e.field).sort();
    assert.deepEqual(fields, [
      "config.allowedDomains[1]",
      "config.allowedDomains[2]",
      "config.defaultRole",
      "config.oidcClientId",
      "config.oidcIssuer",
      "config.oidcScopes",
      "config.provider",
    ]);
    // Values of the wrong JSON type are found while decoding, before the rules: each is named by its path, all at once.
    const typed = await configure(other.apiKey, { provider: "oidc", autoProvision: "yes", enabled: 1, oidcScopes: ["openid", "email"], allowedDomains: "acme.example" });
    assert.equal(typed.status, 400);
    assert.deepEqual(typed.body.errors.map((e: { field: string }) => e.field).sort(), [
      "config.allowedDomains",
      "config.autoProvision",
      "config.enabled",
      "config.oidcScopes",
    ]);
    assert.match(typed.body.detail, /config\.autoProvision: expected boolean, got "yes"/);
    assert.match(typed.body.detail, /config\.allowedDomains: expected array, got "acme\.example"/);
    const missing = await configure(other.apiKey, { enabled: true });
    assert.equal(missing.status, 400);
    assert.match(missing.body.detail, /config\.oidcIssuer: is required/);
    assert.match(missing.body.detail, /config\.oidcClientId: is required/);
    assert.equal((await svc.sql("SELECT * FROM sso_configs WHERE tenant_id = $1", [other.tenantId])).length, 0);

    assert.equal((await rest(svc.baseUrl, "POST", "/api/v1/sso", { key: other.apiKey, body: { action: "delete" } })).body.errors[0].field, "action");
    const noRedirect = await rest(svc.baseUrl, "POST", "/api/v1/sso", { key: tenant.apiKey, body: { action: "get_auth_url" } });
    assert.equal(noRedirect.status, 400);
    assert.equal(noRedirect.body.errors[0].field, "redirectUri");
    const badRedirect = await authUrl(tenant.apiKey, { redirectUri: "http://evil.example/cb" });
    assert.equal(badRedirect.body.errors[0].field, "redirectUri");
    const foreignState = await authUrl(tenant.apiKey, { state: `${other.tenantId}:abcdefghijklmnopqrstuvwx` });
    assert.equal(foreignState.status, 400);
    assert.equal(foreignState.body.errors[0].field, "state");
    const unconfigured = await authUrl(other.apiKey);
    assert.equal(unconfigured.status, 400);
    assert.equal(unconfigured.body.reason, "SSO_NOT_CONFIGURED");
  });

  test("get_auth_url: the provider's URL with PKCE, nonce and the state <tenantId>:<nonce> (the caller's nonce when given, prefixed or not)", async () => {
    const made = await authUrl(tenant.apiKey, { state: `${tenant.tenantId}:caller-chosen-nonce-123` });
    assert.equal(made.status, 200);
    const url = new URL(made.body.authUrl);
    assert.equal(url.origin, idp.issuer);
    assert.equal(url.searchParams.get("client_id"), "client-a");
    assert.equal(url.searchParams.get("state"), `${tenant.tenantId}:caller-chosen-nonce-123`);
    assert.equal(url.searchParams.get("code_challenge_method"), "S256");
    assert.ok(url.searchParams.get("nonce"));
    assert.equal(url.searchParams.get("redirect_uri"), APP_REDIRECT);
    const again = await authUrl(tenant.apiKey, { state: `${tenant.tenantId}:caller-chosen-nonce-123` });
    assert.equal(again.status, 409, "a nonce already pending is not reused");
    const bare = await authUrl(tenant.apiKey, { state: "random-state-1234567890" });
    assert.equal(bare.status, 200, "a state without the tenant prefix is the nonce");
    assert.equal(new URL(bare.body.authUrl).searchParams.get("state"), `${tenant.tenantId}:random-state-1234567890`);
    for (const state of ["xyz", "not a nonce of any kind", `${tenant.tenantId}:short`]) {
      const refused = await authUrl(tenant.apiKey, { state });
      assert.equal(refused.status, 400, state);
      assert.equal(refused.body.errors[0].field, "state");
    }
  });

  test("auto-provisioning: a new user of an allowed domain is created with defaultRole, verified, and gets the session cookie", async () => {
    idp.accounts.set("ann", { email: "Ann@Acme.Example", name: "Ann Archer" });
    const { res } = await tenantSignIn(tenant.apiKey, "ann");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body).sort(), ["created", "email", "name", "provider", "userId"]);
    assert.equal(res.body.created, true);
    assert.equal(res.body.provider, "oidc");
    assert.equal(res.body.email, "ann@acme.example");
    assert.equal(res.body.name, "Ann Archer");
    const [user] = await usersWithEmail(tenant.tenantId, "ann@acme.example");
    assert.equal(user.role, "editor");
    assert.ok(user.email_verified_at);
    const claims = await sessions.verify(sessionTokenOf(res.headers.get("set-cookie") ?? "")!);
    assert.equal(claims?.tenantId, tenant.tenantId);
    assert.equal(claims?.userId, res.body.userId);
    assert.equal(claims?.role, "editor");
    assert.match(res.headers.get("set-cookie")!, /HttpOnly; SameSite=Lax/);

    // The second sign-in finds the same user: never created twice.
    const second = await tenantSignIn(tenant.apiKey, "ann");
    assert.equal(second.res.status, 200);
    assert.equal(second.res.body.created, false);
    assert.equal(second.res.body.userId, res.body.userId);
    assert.equal((await usersWithEmail(tenant.tenantId, "ann@acme.example")).length, 1);
  });

  test("a domain outside allowedDomains is refused (403) and nothing is created", async () => {
    idp.accounts.set("mallory", { email: "mallory@elsewhere.example" });
    const { res } = await tenantSignIn(tenant.apiKey, "mallory");
    assert.equal(res.status, 403);
    assert.equal(res.body.reason, "SSO_DOMAIN_NOT_ALLOWED");
    assert.equal((await usersWithEmail(tenant.tenantId, "mallory@elsewhere.example")).length, 0);
  });

  test("an existing user (provisioned before, any domain) is matched by e-mail and signed in; a disabled one is refused", async () => {
    const existing = await svc.identity.createUser(tenant.tenantId, "Dir.User@partner.example", "viewer", "Directory User");
    idp.accounts.set("dir", { email: "dir.user@partner.example" });
    const { res } = await tenantSignIn(tenant.apiKey, "dir");
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.created, false);
    assert.equal(res.body.userId, existing.userId);
    assert.equal((await usersWithEmail(tenant.tenantId, "dir.user@partner.example")).length, 1);

    await svc.identity.updateUser(tenant.tenantId, existing.userId, { disabled: true });
    const refused = await tenantSignIn(tenant.apiKey, "dir");
    assert.equal(refused.res.status, 403);
    assert.equal(refused.res.body.reason, "USER_DISABLED");
    assert.equal(refused.res.headers.get("set-cookie"), null);
  });

  test("bad state, reused nonce and a missing code: 401 or 400, with nothing created", async () => {
    idp.accounts.set("bob", { email: "bob@acme.example" });
    const { back, res } = await tenantSignIn(tenant.apiKey, "bob");
    assert.equal(res.status, 200);
    const replay = await callback(back.searchParams);
    assert.equal(replay.status, 401, "a nonce is single use");
    assert.equal(replay.body.reason, "SSO_INVALID_STATE");

    idp.accounts.set("carol", { email: "carol@acme.example" });
    const made = await authUrl(tenant.apiKey);
    const carolBack = await idp.signIn(made.body.authUrl, "carol");
    const forged = new URLSearchParams(carolBack.searchParams);
    forged.set("state", `${tenant.tenantId}:${"x".repeat(32)}`);
    assert.equal((await callback(forged)).status, 401);
    forged.set("state", "not-a-state");
    assert.equal((await callback(forged)).status, 401);
    assert.equal((await callback(new URLSearchParams({ code: "x" }))).status, 400);
    assert.equal((await usersWithEmail(tenant.tenantId, "carol@acme.example")).length, 0);
  });

  test("a code with a state of another tenant without SSO is 400 (no oidcClientId); the state is the only source of the tenant", async () => {
    const other = await svc.createTenant();
    const res = await callback(new URLSearchParams({ code: "abc", state: `${other.tenantId}:${"y".repeat(32)}`, tenant: tenant.tenantId }));
    assert.equal(res.status, 400);
    assert.equal(res.body.reason, "SSO_NOT_CONFIGURED");
    const unknown = await callback(new URLSearchParams({ code: "abc", state: `${newId()}:${"y".repeat(32)}` }));
    assert.equal(unknown.status, 400);
  });

  test("cross-tenant isolation: a state made by one tenant cannot complete in another's name", async () => {
    const other = await svc.createTenant();
    assert.equal((await configure(other.apiKey, { oidcIssuer: idp.issuer, oidcClientId: CLIENT_A.clientId, oidcClientSecret: CLIENT_A.clientSecret, autoProvision: true })).status, 200);
    idp.accounts.set("dave", { email: "dave@acme.example" });
    const made = await authUrl(tenant.apiKey);
    const back = await idp.signIn(made.body.authUrl, "dave");
    const nonce = back.searchParams.get("state")!.split(":")[1];
    const moved = new URLSearchParams(back.searchParams);
    moved.set("state", `${other.tenantId}:${nonce}`);
    assert.equal((await callback(moved)).status, 401);
    assert.equal((await usersWithEmail(other.tenantId, "dave@acme.example")).length, 0);
    // The other tenant's GET shows its own configuration, not acme's domains.
    assert.deepEqual((await rest(svc.baseUrl, "GET", "/api/v1/sso", { key: other.apiKey })).body.allowedDomains, []);
  });

  test("an ID token issued to another client (wrong audience) is refused with 401 and nothing created", async () => {
    idp.accounts.set("erin", { email: "erin@acme.example" });
    const made = await authUrl(tenant.apiKey);
    const nonce = new URL(made.body.authUrl).searchParams.get("nonce")!;
    idp.substituteIdToken = await idp.idTokenFor(CLIENT_B, "erin", nonce);
    try {
      const back = await idp.signIn(made.body.authUrl, "erin");
      const res = await callback(back.searchParams);
      assert.equal(res.status, 401);
      assert.equal(res.body.reason, "SSO_TOKEN_REJECTED");
    } finally {
      idp.substituteIdToken = null;
    }
    assert.equal((await usersWithEmail(tenant.tenantId, "erin@acme.example")).length, 0);
  });

  test("an expired ID token is refused with 401 and nothing created", async () => {
    idp.accounts.set("frank", { email: "frank@acme.example" });
    idp.idTokenTtlSeconds = -120;
    try {
      const { res } = await tenantSignIn(tenant.apiKey, "frank");
      assert.equal(res.status, 401);
      assert.equal(res.body.reason, "SSO_TOKEN_REJECTED");
    } finally {
      idp.idTokenTtlSeconds = 300;
    }
    assert.equal((await usersWithEmail(tenant.tenantId, "frank@acme.example")).length, 0);
  });

  test("without autoProvision an unknown user is refused (403)", async () => {
    const other = await svc.createTenant();
    await configure(other.apiKey, { oidcIssuer: idp.issuer, oidcClientId: CLIENT_A.clientId, oidcClientSecret: CLIENT_A.clientSecret });
    idp.accounts.set("gina", { email: "gina@acme.example" });
    const { res } = await tenantSignIn(other.apiKey, "gina");
    assert.equal(res.status, 403);
    assert.equal(res.body.reason, "SSO_USER_NOT_PROVISIONED");
    assert.equal((await usersWithEmail(other.tenantId, "gina@acme.example")).length, 0);
  });

  test("SAML is reserved: configuring it is stored but inactive, and the SAML callback answers not enabled", async () => {
    const other = await svc.createTenant();
    const res = await configure(other.apiKey, { provider: "saml", samlEntityId: "urn:acme", samlSsoUrl: "https://idp.example/sso", samlAcsUrl: "https://app.example/acs" });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.match(res.body.message, /SAML is reserved and inactive/);
    const got = (await rest(svc.baseUrl, "GET", "/api/v1/sso", { key: other.apiKey })).body;
    assert.equal(got.provider, "saml");
    assert.equal(got.active, false);
    assert.equal(got.samlEntityId, "urn:acme");
    assert.equal((await authUrl(other.apiKey)).body.reason, "SSO_NOT_CONFIGURED");
    const enforce = await configure(other.apiKey, { enforceForAllUsers: true });
    assert.equal(enforce.status, 400);
    assert.equal(enforce.body.errors[0].field, "config.enforceForAllUsers");

    const saml = await rest(svc.baseUrl, "POST", "/api/v1/sso/callback", {
      rawBody: new URLSearchParams({ SAMLResponse: Buffer.from("<Response/>").toString("base64"), RelayState: other.tenantId }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    assert.equal(saml.status, 501);
    assert.equal(saml.body.reason, "SAML_NOT_ENABLED");
  });

  test("identity providers must use https unless OUTBOUND_ALLOW_PRIVATE=true; SSO callbacks are limited to 30 per minute per address, discovery and start to 60", async () => {
    const strict = await startTestService({ settingsKeys: [SETTINGS_KEY] });
    try {
      const t = await strict.createTenant();
      const res = await rest(strict.baseUrl, "POST", "/api/v1/sso", { key: t.apiKey, body: { action: "configure", config: { oidcIssuer: idp.issuer, oidcClientId: "x" } } });
      assert.equal(res.status, 400);
      assert.equal(res.body.errors[0].field, "config.oidcIssuer");
      const loopback = await rest(strict.baseUrl, "POST", "/api/v1/sso", { key: t.apiKey, body: { action: "configure", config: { oidcIssuer: "https://127.0.0.1:9/", oidcClientId: "x" } } });
      assert.equal(loopback.status, 400);
      assert.match(loopback.body.detail, /private, loopback or internal/);

      let last: Response | null = null;
      for (let i = 0; i < 31; i++) last = await fetch(`${strict.baseUrl}/api/v1/sso/callback?code=x&state=bad`);
      assert.equal(last!.status, 429);
      assert.ok(Number(last!.headers.get("retry-after")) > 0);
      // The SAML consumer is a callback too: past the limit it is 429, not its 501.
      const saml = await fetch(`${strict.baseUrl}/api/v1/sso/callback`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ SAMLResponse: "eA==", RelayState: t.tenantId }).toString(),
      });
      assert.equal(saml.status, 429);

      // The signed-out discovery and start share 60 per minute per address.
      for (let i = 0; i < 60; i++) assert.equal((await fetch(`${strict.baseUrl}/api/auth/providers?tenant=${t.tenantId}`)).status, 200);
      assert.equal((await fetch(`${strict.baseUrl}/api/auth/providers?tenant=${t.tenantId}`)).status, 429);
      assert.equal((await fetch(`${strict.baseUrl}/api/auth/sso/start?tenant=${t.tenantId}`, { redirect: "manual" })).status, 429);
    } finally {
      await strict.stop();
    }
  });

  test("with Redis down, sign-in fails closed: get_auth_url and the callback answer 503, nothing is let through unlimited", async () => {
    const redis = await startPrivateRedis();
    const down = await startTestService({ settingsKeys: [SETTINGS_KEY], redisUrl: redis.url, outbound: { ...svc.config.outbound } }, svc.config.databaseUrl!);
    try {
      await redis.stop();
      const made = await rest(down.baseUrl, "POST", "/api/v1/sso", { key: tenant.apiKey, body: { action: "get_auth_url", redirectUri: APP_REDIRECT } });
      assert.equal(made.status, 503);
      assert.equal(made.body.reason, "SIGN_IN_STORE_UNAVAILABLE");
      const res = await rest(down.baseUrl, "GET", `/api/v1/sso/callback?code=x&state=${tenant.tenantId}:${"z".repeat(32)}`);
      assert.equal(res.status, 503);
      assert.equal(res.body.reason, "RATE_LIMITER_UNAVAILABLE");
    } finally {
      await redis.start();
      await down.stop();
      await redis.stop();
    }
  });

  test("enforceForAllUsers: the password sign-in policy refuses the tenant's users with a reason", async () => {
    const other = await svc.createTenant();
    assert.equal((await configure(other.apiKey, { oidcIssuer: idp.issuer, oidcClientId: CLIENT_A.clientId, enforceForAllUsers: true })).status, 200);
    const refusal = await svc.running.services.sso.passwordSignInPolicy.refusal(other.tenantId);
    assert.match(refusal ?? "", /requires single sign-on/);
    assert.equal(await svc.running.services.sso.passwordSignInPolicy.refusal(tenant.tenantId), null);
    assert.equal((await configure(other.apiKey, { enabled: false })).status, 400, "disabling while enforcing would lock users out");
    assert.equal((await configure(other.apiKey, { enabled: false, enforceForAllUsers: false })).status, 200);
    assert.equal(await svc.running.services.sso.passwordSignInPolicy.refusal(other.tenantId), null);
  });

  test("GET /api/auth/providers: the deployment's provider, the tenant's SSO, and password unless SSO is enforced; unknown tenants read like ones without SSO", async () => {
    const providers = async (query: string) => {
      const res = await fetch(`${svc.baseUrl}/api/auth/providers${query}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("cache-control"), "no-store");
      return res.json();
    };
    assert.deepEqual(await providers(""), { password: true, identityProvider: true, sso: false });
    assert.deepEqual(await providers(`?tenant=${tenant.tenantId}`), { password: true, identityProvider: true, sso: true });
    const withoutSso = { password: true, identityProvider: true, sso: false };
    assert.deepEqual(await providers(`?tenant=${newId()}`), withoutSso, "an unknown tenant");
    assert.deepEqual(await providers(`?tenant=not-a-uuid'--`), withoutSso, "a malformed id");
    const plain = await svc.createTenant();
    assert.deepEqual(await providers(`?tenant=${plain.tenantId}`), withoutSso);

    const enforced = await svc.createTenant();
    assert.equal((await configure(enforced.apiKey, { oidcIssuer: idp.issuer, oidcClientId: CLIENT_A.clientId, enforceForAllUsers: true })).status, 200);
    assert.deepEqual(await providers(`?tenant=${enforced.tenantId}`), { password: false, identityProvider: true, sso: true });
    assert.equal((await configure(enforced.apiKey, { enabled: false, enforceForAllUsers: false })).status, 200);
    assert.deepEqual(await providers(`?tenant=${enforced.tenantId}`), withoutSso, "a disabled configuration offers no SSO");
    assert.equal((await fetch(`${svc.baseUrl}/api/auth/providers`, { method: "POST" })).status, 405);
  });

  test("GET /api/auth/sso/start: 302 to the provider as get_auth_url makes it; the callback then answers 302 to returnTo with the session cookie, once", async () => {
    idp.accounts.set("sam", { email: "sam@acme.example", name: "Sam Start" });
    const start = await fetch(`${svc.baseUrl}/api/auth/sso/start?tenant=${tenant.tenantId}&returnTo=${encodeURIComponent("/console/offers?q=x")}`, { redirect: "manual" });
    assert.equal(start.status, 302, await start.text());
    const auth = new URL(start.headers.get("location")!);
    assert.equal(auth.origin, idp.issuer);
    assert.equal(auth.searchParams.get("client_id"), "client-a");
    assert.equal(auth.searchParams.get("redirect_uri"), `${PUBLIC_URL}/api/v1/sso/callback`);
    assert.equal(auth.searchParams.get("code_challenge_method"), "S256");
    assert.ok(auth.searchParams.get("nonce"));
    assert.match(auth.searchParams.get("state")!, new RegExp(`^${tenant.tenantId}:[A-Za-z0-9_-]{32}$`));

    const back = await idp.signIn(auth.href, "sam");
    assert.equal(back.origin + back.pathname, `${PUBLIC_URL}/api/v1/sso/callback`);
    const done = await fetch(`${svc.baseUrl}/api/v1/sso/callback${back.search}`, { redirect: "manual" });
    assert.equal(done.status, 302, await done.text());
    assert.equal(done.headers.get("location"), `${PUBLIC_URL}/console/offers?q=x`);
    const cookie = done.headers.getSetCookie().find((c) => c.startsWith("ds_session="))!;
    assert.match(cookie, /HttpOnly; SameSite=Lax/);
    const claims = await sessions.verify(sessionTokenOf(cookie)!);
    assert.equal(claims?.tenantId, tenant.tenantId);
    const [user] = await usersWithEmail(tenant.tenantId, "sam@acme.example");
    assert.equal(claims?.userId, user.id);
    const replay = await fetch(`${svc.baseUrl}/api/v1/sso/callback${back.search}`, { redirect: "manual" });
    assert.equal(replay.status, 401, "the nonce is single use");

    // Without returnTo the start still redirects back to the site's root.
    const bare = await fetch(`${svc.baseUrl}/api/auth/sso/start?tenant=${tenant.tenantId}`, { redirect: "manual" });
    const bareBack = await idp.signIn(bare.headers.get("location")!, "sam");
    const bareDone = await fetch(`${svc.baseUrl}/api/v1/sso/callback${bareBack.search}`, { redirect: "manual" });
    assert.equal(bareDone.status, 302);
    assert.equal(bareDone.headers.get("location"), `${PUBLIC_URL}/`);
  });

  test("GET /api/auth/sso/start refuses an off-site returnTo (400 naming it) and answers one 400 for a tenant without active SSO, known or not", async () => {
    for (const returnTo of ["//evil.example", "https://evil.example/", "javascript:alert(1)", "/\\evil.example"]) {
      const res = await fetch(`${svc.baseUrl}/api/auth/sso/start?tenant=${tenant.tenantId}&returnTo=${encodeURIComponent(returnTo)}`, { redirect: "manual" });
      assert.equal(res.status, 400, returnTo);
      assert.match((await res.json()).detail, /returnTo/, returnTo);
    }
    const missing = await fetch(`${svc.baseUrl}/api/auth/sso/start`, { redirect: "manual" });
    assert.equal(missing.status, 400);
    assert.match((await missing.json()).detail, /tenant/);
    const plain = await svc.createTenant();
    const answers = [];
    for (const id of [plain.tenantId, newId(), "nonsense"]) {
      const res = await fetch(`${svc.baseUrl}/api/auth/sso/start?tenant=${encodeURIComponent(id)}&returnTo=/console`, { redirect: "manual" });
      assert.equal(res.status, 400);
      const body = await res.json();
      answers.push([body.reason, body.detail]);
    }
    assert.deepEqual(answers[1], answers[0]);
    assert.deepEqual(answers[2], answers[0]);
    assert.equal(answers[0][0], "SSO_NOT_ACTIVE");
  });

  test("the callback of a get_auth_url sign-in still answers spec 4.19's 200 body, not a redirect", async () => {
    idp.accounts.set("sam", { email: "sam@acme.example", name: "Sam Start" });
    const made = await authUrl(tenant.apiKey);
    assert.equal(made.status, 200, JSON.stringify(made.body));
    const back = await idp.signIn(made.body.authUrl, "sam");
    const res = await fetch(`${svc.baseUrl}/api/v1/sso/callback${back.search}`, { redirect: "manual" });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("location"), null);
    const body = await res.json();
    assert.equal(body.email, "sam@acme.example");
    assert.equal(body.provider, "oidc");
    assert.ok(res.headers.getSetCookie().some((c) => c.startsWith("ds_session=")));
  });

  test("global OIDC sign-in: redirect to the provider, callback sets the session cookie; a new person gets a personal workspace as admin", async () => {
    idp.accounts.set("henry", { email: "henry@solo.example", name: "Henry" });
    const start = await fetch(`${svc.baseUrl}/api/auth/signin/oidc?returnTo=/console/offers`, { redirect: "manual" });
    assert.equal(start.status, 302);
    const stateCookie = start.headers.getSetCookie().find((c) => c.startsWith("ds_oidc_state="))!;
    assert.match(stateCookie, /HttpOnly; SameSite=Lax/);
    const back = await idp.signIn(start.headers.get("location")!, "henry");
    assert.equal(back.origin + back.pathname, `${PUBLIC_URL}/api/auth/callback/oidc`);
    const cookie = stateCookie.split(";")[0];
    // Without the browser's state cookie the callback is refused: a link made for another browser signs nobody in.
    const foreign = await fetch(`${svc.baseUrl}/api/auth/callback/oidc${back.search}`, { redirect: "manual" });
    assert.equal(foreign.status, 401);
    const done = await fetch(`${svc.baseUrl}/api/auth/callback/oidc${back.search}`, { redirect: "manual", headers: { cookie } });
    assert.equal(done.status, 302, await done.text());
    assert.equal(done.headers.get("location"), `${PUBLIC_URL}/console/offers`);
    const claims = await sessions.verify(sessionTokenOf(done.headers.getSetCookie().find((c) => c.startsWith("ds_session="))!)!);
    assert.ok(claims);
    assert.equal(claims.role, "admin");
    const [user] = await svc.sql("SELECT u.*, t.name AS tenant_name FROM users u JOIN tenants t ON t.id = u.tenant_id WHERE u.id = $1", [claims.userId]);
    assert.equal(user.email, "henry@solo.example");
    assert.ok(user.email_verified_at);
    assert.equal(user.tenant_name, "Henry's Workspace");
    assert.equal(claims.tenantId, user.tenant_id);

    // The same person again: signed in to the same account, no second workspace.
    const again = await fetch(`${svc.baseUrl}/api/auth/signin/oidc`, { redirect: "manual" });
    const againCookie = again.headers.getSetCookie()[0].split(";")[0];
    const back2 = await idp.signIn(again.headers.get("location")!, "henry");
    const done2 = await fetch(`${svc.baseUrl}/api/auth/callback/oidc${back2.search}`, { redirect: "manual", headers: { cookie: againCookie } });
    assert.equal(done2.status, 302);
    assert.equal(done2.headers.get("location"), `${PUBLIC_URL}/`);
    const claims2 = await sessions.verify(sessionTokenOf(done2.headers.getSetCookie().find((c) => c.startsWith("ds_session="))!)!);
    assert.equal(claims2?.userId, claims.userId);
    assert.equal((await svc.sql("SELECT * FROM users WHERE lower(email) = 'henry@solo.example'")).length, 1);
    // Replaying the finished callback is refused.
    const replay = await fetch(`${svc.baseUrl}/api/auth/callback/oidc${back2.search}`, { redirect: "manual", headers: { cookie: againCookie } });
    assert.equal(replay.status, 401);
  });

  test("global OIDC sign-in: an existing verified account is signed in; a disabled one is refused; returnTo must stay on the site", async () => {
    idp.accounts.set("ivy", { email: "ivy@acme.example" });
    const first = await tenantSignIn(tenant.apiKey, "ivy");
    assert.equal(first.res.status, 200);
    const signIn = async () => {
      const start = await fetch(`${svc.baseUrl}/api/auth/signin/oidc`, { redirect: "manual" });
      const cookie = start.headers.getSetCookie()[0].split(";")[0];
      const back = await idp.signIn(start.headers.get("location")!, "ivy");
      return fetch(`${svc.baseUrl}/api/auth/callback/oidc${back.search}`, { redirect: "manual", headers: { cookie } });
    };
    const done = await signIn();
    assert.equal(done.status, 302);
    const claims = await sessions.verify(sessionTokenOf(done.headers.getSetCookie().find((c) => c.startsWith("ds_session="))!)!);
    assert.equal(claims?.tenantId, tenant.tenantId);
    assert.equal(claims?.userId, first.res.body.userId);

    await svc.identity.updateUser(tenant.tenantId, first.res.body.userId, { disabled: true });
    const refused = await signIn();
    assert.equal(refused.status, 403);
    assert.equal((await svc.sql("SELECT * FROM users WHERE lower(email) = 'ivy@acme.example'")).length, 1, "no workspace made instead");

    const offsite = await fetch(`${svc.baseUrl}/api/auth/signin/oidc?returnTo=//evil.example/`, { redirect: "manual" });
    assert.equal(offsite.status, 400);
  });

  test("two first sign-ins of the same person at once create one user", async () => {
    idp.accounts.set("jo", { email: "jo@acme.example" });
    const backs = await Promise.all([0, 1].map(async () => idp.signIn((await authUrl(tenant.apiKey)).body.authUrl, "jo")));
    const results = await Promise.all(backs.map((b) => callback(b.searchParams)));
    assert.deepEqual(results.map((r) => r.status), [200, 200], JSON.stringify(results.map((r) => r.body)));
    assert.deepEqual(results.map((r) => r.body.created).sort(), [false, true]);
    assert.equal(results[0].body.userId, results[1].body.userId);
    assert.equal((await usersWithEmail(tenant.tenantId, "jo@acme.example")).length, 1);
  });

  test("no log line holds a client secret", () => {
    const all = logged.join("");
    assert.ok(all.length > 0, "the service logged something to check");
    for (const secret of [CLIENT_A.clientSecret, GLOBAL_CLIENT.clientSecret]) assert.ok(!all.includes(secret));
  });

  // Last: afterwards the secrets are sealed under a key the main service of this file does not have.
  test("settings key rotation re-seals stored client secrets, which keep working under the new key", async () => {
    const next = { id: "k2", secret: "sso-settings-key-2-0123456789abcdef0123" };
    const rotated = await startTestService(
      { settingsKeys: [next, SETTINGS_KEY], outbound: { ...svc.config.outbound }, rateLimits: svc.config.rateLimits },
      svc.config.databaseUrl!,
    );
    try {
      const result = await rotated.running.services.notifications.rotateKey();
      assert.ok(result.others.sso >= 1);
      const keyIds = await rotated.sql("SELECT DISTINCT oidc_client_secret_key_id AS id FROM sso_configs WHERE oidc_client_secret IS NOT NULL");
      assert.deepEqual(keyIds.map((r) => r.id), ["k2"]);
      const onlyNew = await startTestService({ settingsKeys: [next], outbound: { ...svc.config.outbound } }, svc.config.databaseUrl!);
      try {
        idp.accounts.set("kim", { email: "kim@acme.example" });
        const made = await rest(onlyNew.baseUrl, "POST", "/api/v1/sso", { key: tenant.apiKey, body: { action: "get_auth_url", redirectUri: APP_REDIRECT } });
        const back = await idp.signIn(made.body.authUrl, "kim");
        const res = await rest(onlyNew.baseUrl, "GET", `/api/v1/sso/callback?${back.searchParams}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
      } finally {
        await onlyNew.stop();
      }
    } finally {
      await rotated.stop();
    }
  });
});

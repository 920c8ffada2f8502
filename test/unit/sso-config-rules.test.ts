import { test } from "node:test";
import assert from "node:assert/strict";
import { applySsoPatch, DEFAULT_SSO_SETTINGS, domainAllowed, isActive, providerUrlProblem, redirectUriProblem } from "../../src/sso/sso-config-rules.js";
import { isForbiddenAddress } from "../../src/notifications/outbound-guard.js";
import { loadConfig } from "../../src/config.js";

const strictUrl = (raw: string) => providerUrlProblem(raw, false, isForbiddenAddress);

test("issuer URLs: https only, no credentials, query or internal literal address; http only where private addresses are allowed", () => {
  const cases: Array<[string, boolean, string | null]> = [
    ["https://login.example.com/tenant", false, null],
    ["http://login.example.com", false, "must be an https URL"],
    ["http://127.0.0.1:8080", true, null],
    ["https://10.0.0.5", false, "must not point at a private, loopback or internal address"],
    ["https://[::1]/", false, "must not point at a private, loopback or internal address"],
    ["https://user:pw@login.example.com", false, "must not carry credentials"],
    ["https://login.example.com/?x=1", false, "must not carry a query or fragment"],
    ["not a url", false, "must be an absolute https URL"],
  ];
  for (const [raw, allowPrivate, expected] of cases) assert.equal(providerUrlProblem(raw, allowPrivate, isForbiddenAddress), expected, raw);
});

test("redirect URIs: https, or http on loopback hosts; never a query or fragment", () => {
  assert.equal(redirectUriProblem("https://app.example/cb"), null);
  assert.equal(redirectUriProblem("http://localhost:3000/cb"), null);
  assert.equal(redirectUriProblem("http://app.example/cb"), "must be an https URL (http only on localhost)");
  assert.equal(redirectUriProblem("https://app.example/cb?next=/"), "must not carry a query or fragment");
  assert.equal(redirectUriProblem("javascript:alert(1)"), "must be an https URL (http only on localhost)");
});

test("a patch merges over what is stored: fields left out keep their value, domains are normalized", () => {
  const first = applySsoPatch(null, { oidcIssuer: "https://idp.example/", oidcClientId: "abc", allowedDomains: ["@Acme.COM", "acme.com", "b.example"] }, strictUrl);
  assert.deepEqual(first.violations, []);
  assert.equal(first.settings.oidcIssuer, "https://idp.example");
  assert.deepEqual(first.settings.allowedDomains, ["acme.com", "b.example"]);
  assert.equal(first.settings.defaultRole, DEFAULT_SSO_SETTINGS.defaultRole);
  assert.ok(isActive(first.settings));
  const second = applySsoPatch(first.settings, { defaultRole: "admin", oidcScopes: "openid  email openid" }, strictUrl);
  assert.equal(second.settings.oidcClientId, "abc");
  assert.equal(second.settings.defaultRole, "admin");
  assert.equal(second.settings.oidcScopes, "openid email");
});

test("an enabled OIDC configuration needs issuer and client id; enforcing needs an active one; SAML is stored but never active", () => {
  const { violations } = applySsoPatch(null, { enforceForAllUsers: true }, strictUrl);
  assert.deepEqual(violations.map((v) => v.field).sort(), ["config.enforceForAllUsers", "config.oidcClientId", "config.oidcIssuer"]);
  const saml = applySsoPatch(null, { provider: "saml", samlSsoUrl: "https://idp.example/sso" }, strictUrl);
  assert.deepEqual(saml.violations, []);
  assert.equal(isActive(saml.settings), false);
  const disabled = applySsoPatch(null, { enabled: false }, strictUrl);
  assert.deepEqual(disabled.violations, []);
  assert.equal(isActive(disabled.settings), false);
});

test("allowed domains: an empty list allows every domain; otherwise the address's domain, in any case", () => {
  assert.equal(domainAllowed("a@x.example", []), true);
  assert.equal(domainAllowed("a@X.Example", ["x.example"]), true);
  assert.equal(domainAllowed("a@sub.x.example", ["x.example"]), false);
  assert.equal(domainAllowed("no-at-sign", ["x.example"]), false);
});

test("AUTH_OIDC_*: all three or none, https unless private addresses are allowed, and PUBLIC_URL with them", () => {
  const oidc = { AUTH_OIDC_ISSUER: "https://login.example.com/", AUTH_OIDC_CLIENT_ID: "svc", AUTH_OIDC_CLIENT_SECRET: "s3cret" };
  assert.equal(loadConfig({}).authOidc, null);
  assert.deepEqual(loadConfig({ ...oidc, PUBLIC_URL: "https://app.example.com/" }).authOidc, { issuer: "https://login.example.com", clientId: "svc", clientSecret: "s3cret" });
  assert.equal(loadConfig({ PUBLIC_URL: "https://app.example.com/" }).publicUrl, "https://app.example.com");
  assert.throws(() => loadConfig({ AUTH_OIDC_ISSUER: oidc.AUTH_OIDC_ISSUER, PUBLIC_URL: "https://app.example.com" }), /must be set together/);
  assert.throws(() => loadConfig(oidc), /needs PUBLIC_URL/);
  assert.throws(() => loadConfig({ ...oidc, AUTH_OIDC_ISSUER: "http://127.0.0.1:9000", PUBLIC_URL: "https://app.example.com" }), /must be an https URL/);
  assert.equal(loadConfig({ ...oidc, AUTH_OIDC_ISSUER: "http://127.0.0.1:9000", PUBLIC_URL: "http://localhost:8080", OUTBOUND_ALLOW_PRIVATE: "true" }).authOidc?.issuer, "http://127.0.0.1:9000");
  assert.throws(() => loadConfig({ PUBLIC_URL: "ftp://app.example.com" }), /PUBLIC_URL must be/);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { defaultTenantName, displayNameViolations, emailViolations, normalizeEmail, passwordViolations } from "../../src/sessions/account-rules.js";
import { loadConfig, sessionCookieSecure, ConfigError } from "../../src/config.js";
import { csrfRefusal } from "../../src/transport/csrf-guard.js";
import { charCount } from "../../src/core/char-count.js";
import type { CallInfo } from "../../src/platform/context.js";

test("spec 5.5's password rule names each failure", () => {
  assert.deepEqual(passwordViolations("Abcdefg1"), []);
  assert.deepEqual(passwordViolations("Ünïcode9"), [], "upper-case letters and digits beyond ASCII count");
  assert.deepEqual(passwordViolations("abc").map((v) => v.message), [
    "must be at least 8 characters",
    "must contain at least one upper-case letter",
    "must contain at least one digit",
  ]);
  assert.deepEqual(passwordViolations("ABCDEFGH1"), []);
  assert.deepEqual(passwordViolations("abcdefgh1").map((v) => v.message), ["must contain at least one upper-case letter"]);
  assert.deepEqual(passwordViolations(undefined), [{ field: "password", message: "is required" }]);
  assert.deepEqual(passwordViolations(`A1${"x".repeat(300)}`).map((v) => v.message), ["must be at most 256 characters"]);
});

test("addresses: plausible ones pass, the rest name the field; they compare lower-cased", () => {
  for (const ok of ["a@example.com", "first.last+tag@sub.example.co.uk", "x_y-z@xn--bcher-kva.example"]) assert.deepEqual(emailViolations(ok), [], ok);
  for (const bad of ["", "plain", "a@b", "a@.com", "a..b@example.com", "a b@example.com", "a@exa mple.com", "<a@example.com>", `${"l".repeat(65)}@example.com`]) {
    assert.equal(emailViolations(bad)[0]?.field, "email", bad);
  }
  assert.equal(normalizeEmail("  Ada@Example.COM "), "ada@example.com");
});

test("length limits count characters (code points), not UTF-16 units: one emoji is one character (spec 2.4)", () => {
  const cases: Array<[string, number]> = [["", 0], ["abc", 3], ["\u{1F600}", 1], ["\u{1F600}".repeat(128), 128], ["a\u{1F600}b", 3], ["é", 1], ["\uD83D", 1], ["\uDE00x", 2]];
  for (const [text, expected] of cases) assert.equal(charCount(text), expected, JSON.stringify(text));
  for (const text of ["x\u{1F600}y\u{10FFFF}", "\uD83D\uD83D\uDE00", "plain"]) assert.equal(charCount(text), [...text].length, JSON.stringify(text));
  assert.deepEqual(displayNameViolations("\u{1F600}".repeat(100), "name", 100, true), []);
  assert.equal(displayNameViolations("\u{1F600}".repeat(101), "name", 100, true)[0]?.message, "must be at most 100 characters");
  assert.deepEqual(passwordViolations("A1\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}").map((v) => v.message), ["must be at least 8 characters"], "7 characters, 12 units");
});

test("names: required or not, bounded, no control characters; the default workspace name", () => {
  assert.deepEqual(displayNameViolations("Ada", "name", 100, true), []);
  assert.deepEqual(displayNameViolations("  ", "name", 100, true), [{ field: "name", message: "is required" }]);
  assert.deepEqual(displayNameViolations(undefined, "tenantName", 100, false), []);
  assert.equal(displayNameViolations("a\nb", "name", 100, true)[0].message, "must not contain control characters");
  assert.equal(displayNameViolations("x".repeat(101), "name", 100, true)[0].message, "must be at most 100 characters");
  assert.equal(defaultTenantName("Ada"), "Ada's Workspace");
});

test("SESSION_COOKIE_SECURE: auto is Secure except plain HTTP on loopback; true and false force it", () => {
  assert.equal(sessionCookieSecure({}, "https://decide.example.com"), true);
  assert.equal(sessionCookieSecure({}, "http://decide.example.com"), true);
  assert.equal(sessionCookieSecure({}, "http://localhost:8080"), false);
  assert.equal(sessionCookieSecure({}, "http://127.0.0.1:8080"), false);
  assert.equal(sessionCookieSecure({ SESSION_COOKIE_SECURE: "true" }, "http://localhost:8080"), true);
  assert.equal(sessionCookieSecure({ SESSION_COOKIE_SECURE: "false" }, "https://decide.example.com"), false);
  assert.throws(() => sessionCookieSecure({ SESSION_COOKIE_SECURE: "yes" }, "https://x.example"), ConfigError);
  const config = loadConfig({ PUBLIC_URL: "https://decide.example.com/", REGISTRATION: "off" });
  assert.deepEqual([config.publicUrl, config.sessionCookieSecure, config.registrationEnabled], ["https://decide.example.com", true, false]);
  assert.equal(loadConfig({ PORT: "9000" }).publicUrl, "http://localhost:9000");
  assert.throws(() => loadConfig({ PUBLIC_URL: "ftp://x" }), /PUBLIC_URL must be an http or https URL/);
});

test("the CSRF guard: keys always, the cookie only where it carries authority", () => {
  const call = (headers: Record<string, string>): CallInfo => ({ header: (n) => headers[n], remoteAddress: "127.0.0.1" });
  const cookie = { cookie: "ds_session=abc" };
  assert.equal(csrfRefusal("POST", "text/plain", call(cookie), true)?.reason, "CSRF_GUARD");
  assert.equal(csrfRefusal("POST", "text/plain", call(cookie), false), null, "public and cron methods");
  assert.equal(csrfRefusal("GET", "text/plain", call(cookie), true), null);
  assert.equal(csrfRefusal("DELETE", undefined, call({ ...cookie, "x-requested-with": "fetch" }), true), null);
  assert.equal(csrfRefusal("POST", "application/json", call({ ...cookie, "sec-fetch-site": "cross-site" }), true)?.reason, "CSRF_GUARD");
  assert.equal(csrfRefusal("POST", "application/json", call({ ...cookie, "sec-fetch-site": "same-site" }), true), null);
  assert.equal(csrfRefusal("POST", "text/plain", call({ ...cookie, authorization: "Bearer t" }), true), null, "a bearer token is no ambient credential");
  assert.equal(csrfRefusal("POST", "text/plain", call({ "x-api-key": "krn_x" }), false)?.reason, "CSRF_GUARD");
});

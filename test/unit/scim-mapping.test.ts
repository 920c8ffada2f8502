import { test } from "node:test";
import assert from "node:assert/strict";
import { ScimFilter } from "../../src/scim/scim-filter.js";
import { toDirectoryWrite, toScimUser } from "../../src/scim/scim-mapper.js";
import type { DirectoryUserRow } from "../../src/scim/scim-store.js";

const row = (over: Partial<DirectoryUserRow> = {}): DirectoryUserRow => ({
  tenant_id: "t",
  id: "u1",
  email: "Ada@Example.com",
  name: "Ada Lovelace",
  role: "editor",
  disabled: false,
  token_version: 1,
  user_name: "ada",
  given_name: "Ada",
  family_name: "Lovelace",
  external_id: "ext-1",
  email_verified_at: null,
  deleted_at: null,
  created_at: new Date("2026-01-01T00:00:00Z"),
  updated_at: new Date("2026-01-02T00:00:00Z"),
  ...over,
});

function matches(expression: string, rows: DirectoryUserRow[]): string[] {
  const filter = ScimFilter.parse(expression, "User");
  const views = rows.map((r) => ({ view: filter.caseless(toScimUser(r)), id: r.id }));
  const hits = new Set(filter.match(views.map((v) => v.view)));
  return views.filter((v) => hits.has(v.view)).map((v) => v.id);
}

test("filters: caseless where RFC 7643 says so, exact for ids, value paths, boolean logic, dates", () => {
  const users = [row(), row({ id: "u2", user_name: "grace", email: "grace@example.com", external_id: "EXT-2", disabled: true, role: "viewer" })];
  assert.deepEqual(matches('userName eq "ADA"', users), ["u1"]);
  assert.deepEqual(matches('emails[value ew "@EXAMPLE.COM" and type eq "work"]', users), ["u1", "u2"]);
  assert.deepEqual(matches('externalId eq "ext-2"', users), [], "externalId is case-exact");
  assert.deepEqual(matches('externalId eq "EXT-2"', users), ["u2"]);
  assert.deepEqual(matches("active eq false", users), ["u2"]);
  assert.deepEqual(matches('not (userName eq "ada")', users), ["u2"]);
  assert.deepEqual(matches('name.familyName sw "love" or userName eq "grace"', users), ["u1", "u2"]);
  assert.deepEqual(matches('meta.created gt "2025-12-31T00:00:00Z"', users), ["u1", "u2"]);
});

test("filters the service cannot evaluate are invalidFilter", () => {
  for (const expression of ['userName zz "a"', "userName eq", 'title eq "x"', 'phoneNumbers[value eq "1"]', "((userName pr"]) {
    assert.throws(() => ScimFilter.parse(expression, "User"), (err: any) => err.status === 400 && err.scimType === "invalidFilter", expression);
  }
  assert.throws(() => ScimFilter.parse('userName eq "a"', "Group"), (err: any) => err.scimType === "invalidFilter", "groups have no userName");
});

test("a directory user's address: primary, else work, else first, else an address-like userName", () => {
  const base = { userName: "u@example.com" };
  assert.equal(toDirectoryWrite({ ...base, emails: [{ value: "home@x.io", type: "home" }, { value: "p@x.io", primary: true }] }).email, "p@x.io");
  assert.equal(toDirectoryWrite({ ...base, emails: [{ value: "home@x.io", type: "home" }, { value: "w@x.io", type: "Work" }] }).email, "w@x.io");
  assert.equal(toDirectoryWrite({ ...base, emails: [{ value: "first@x.io" }] }).email, "first@x.io");
  assert.equal(toDirectoryWrite(base).email, "u@example.com");
  assert.throws(() => toDirectoryWrite({ userName: "upn-without-at" }), (err: any) => err.status === 400 && /emails/.test(err.message));
  assert.throws(() => toDirectoryWrite({ userName: "x", emails: [{ value: "not an address" }] }), (err: any) => err.scimType === "invalidValue");
});

test("a directory user's display name and state", () => {
  assert.equal(toDirectoryWrite({ userName: "u@x.io", displayName: " Shown " }).name, "Shown");
  assert.equal(toDirectoryWrite({ userName: "u@x.io", name: { formatted: "Formatted", givenName: "G" } }).name, "Formatted");
  assert.equal(toDirectoryWrite({ userName: "u@x.io", name: { givenName: "G", familyName: "F" } }).name, "G F");
  assert.equal(toDirectoryWrite({ userName: "u@x.io" }).name, "u@x.io");
  assert.equal(toDirectoryWrite({ userName: "u@x.io" }).disabled, false, "active defaults to true");
  assert.equal(toDirectoryWrite({ userName: "u@x.io", active: false }).disabled, true);
});

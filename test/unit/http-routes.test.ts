import { test } from "node:test";
import assert from "node:assert/strict";
import { findHttpRoute, type HttpRoute } from "../../src/transport/http-routes.js";

const route = (path: string): HttpRoute => ({ path, handle: async () => {} });

test("an exact path wins, then the longest prefix; a path outside every route finds none", () => {
  const routes = [route("/api/v1/scim/"), route("/api/v1/scim/v2/"), route("/api/auth/session"), route("/api/auth/")];
  assert.equal(findHttpRoute(routes, "/api/auth/session")?.path, "/api/auth/session");
  assert.equal(findHttpRoute(routes, "/api/auth/sign-in")?.path, "/api/auth/");
  assert.equal(findHttpRoute(routes, "/api/v1/scim/v2/Users")?.path, "/api/v1/scim/v2/");
  assert.equal(findHttpRoute(routes, "/api/v1/scim"), undefined);
  assert.equal(findHttpRoute(routes, "/api/v1/offers"), undefined);
});

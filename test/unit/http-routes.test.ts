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

test("a route that does not claim a request is passed over, so that it goes on to Connect and REST", () => {
  const signed: HttpRoute = { path: "/api/v1/reports/runs/", claims: (req) => (req.url ?? "").includes("signature="), handle: async () => {} };
  const req = (url: string) => ({ url }) as never;
  assert.equal(findHttpRoute([signed], "/api/v1/reports/runs/r/artifacts/csv", req("/api/v1/reports/runs/r/artifacts/csv?signature=ab")), signed);
  assert.equal(findHttpRoute([signed], "/api/v1/reports/runs/r/artifacts/csv", req("/api/v1/reports/runs/r/artifacts/csv")), undefined);
});

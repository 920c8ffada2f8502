import assert from "node:assert/strict";
import { rest } from "./clients.js";

/** A tenant as TestService.createTenant makes it. */
export type Tenant = { tenantId: string; userId: string; apiKey: string };

let n = 0;
/** A name no other call of the test run has used. */
export const unique = (base: string) => `${base}-${++n}-${Math.random().toString(36).slice(2, 6)}`;

/**
 * The REST calls of a test that builds a tenant's configuration: `call` sends X-Requested-With,
 * which satisfies the CSRF guard (spec 5.1 rule 3) on body-less writes such as DELETE; `create`
 * expects 201; `dataKey` mints a data-plane key. `baseUrl` is read at every call, so a test may
 * restart its service.
 */
export function tenantCalls(baseUrl: () => string) {
  const call = (method: string, path: string, key: string, body?: unknown) =>
    rest(baseUrl(), method, path, { key, body, headers: { "x-requested-with": "test" } });

  async function create(path: string, body: Record<string, unknown>, t: Tenant) {
    const res = await call("POST", `/api/v1/${path}`, t.apiKey, body);
    assert.equal(res.status, 201, `${path}: ${JSON.stringify(res.body)}`);
    return res.body;
  }

  async function dataKey(t: Tenant): Promise<string> {
    const res = await call("POST", "/api/v1/api-keys", t.apiKey, { name: unique("sdk") });
    assert.equal(res.status, 201);
    return res.body.key;
  }

  return { call, create, dataKey };
}

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";

/**
 * Two processes promote two models of one family to champion at the same moment. The tenant's
 * write lock orders the moves and the partial unique index backs it: exactly one champion remains,
 * and neither caller sees a 5xx.
 */
let svc: TestService;
let child: ChildService;
let admin: { tenantId: string; apiKey: string };

before(async () => {
  svc = await startTestService();
  child = await startChildService(svc);
  admin = await svc.createTenant();
});
after(async () => {
  await child?.stop();
  await svc?.stop();
});

const on = (baseUrl: string) => (method: string, path: string, body?: unknown) => rest(baseUrl, method, path, { key: admin.apiKey, body });

/** Two challengers of a fresh family, created through the first process. */
async function rivals(family: string): Promise<[string, string]> {
  const ids: string[] = [];
  for (const key of [`${family}-a`, `${family}-b`]) {
    const created = await on(svc.baseUrl)("POST", "/api/v1/algorithm-models", { name: key, key, type: "adaptive" });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await on(svc.baseUrl)("POST", `/api/v1/algorithm-models/${created.body.id}/promote`, { toStatus: "challenger", family })).status, 200);
    ids.push(created.body.id);
  }
  return ids as [string, string];
}

async function championsOf(family: string): Promise<Array<{ id: string; registry_status: string }>> {
  const [rows] = await svc.running.foundation.db.query(
    "SELECT id, registry_status FROM algorithm_models WHERE tenant_id = $1 AND family = $2 ORDER BY registry_status",
    { bind: [admin.tenantId, family] },
  );
  return rows as Array<{ id: string; registry_status: string }>;
}

describe("concurrent promotes in one family, across two processes", () => {
  const ROUNDS = 5;

  test("with the guard bypassed both moves apply in some order: one champion, the other demoted to challenger", async () => {
    const families = Array.from({ length: ROUNDS }, (_, i) => `bypassed-${i}`);
    const pairs = await Promise.all(families.map(rivals));
    const answers = await Promise.all(
      pairs.flatMap(([a, b]) => [
        on(svc.baseUrl)("POST", `/api/v1/algorithm-models/${a}/promote`, { toStatus: "champion", bypassRollbackGuard: true }),
        on(child.baseUrl)("POST", `/api/v1/algorithm-models/${b}/promote`, { toStatus: "champion", bypassRollbackGuard: true }),
      ]),
    );
    assert.deepEqual(answers.map((r) => r.status), answers.map(() => 200), JSON.stringify(answers.map((r) => r.body)));
    for (const [i, family] of families.entries()) {
      const rows = await championsOf(family);
      assert.deepEqual(rows.map((r) => r.registry_status), ["challenger", "champion"], family);
      // The later move demoted the earlier one, and says so.
      const [first, second] = [answers[2 * i], answers[2 * i + 1]];
      const later = first.body.demoted ? first : second;
      assert.equal(later.body.model.id, rows[1].id, `${family}: the move that demoted the other is the one that holds`);
    }
  });

  test("with the guard on, the first move wins and the second is a 409 (its model scored no decisions)", async () => {
    const families = Array.from({ length: ROUNDS }, (_, i) => `guarded-${i}`);
    const pairs = await Promise.all(families.map(rivals));
    const answers = await Promise.all(
      pairs.flatMap(([a, b]) => [
        on(svc.baseUrl)("POST", `/api/v1/algorithm-models/${a}/promote`, { toStatus: "champion" }),
        on(child.baseUrl)("POST", `/api/v1/algorithm-models/${b}/promote`, { toStatus: "champion" }),
      ]),
    );
    for (const [i, family] of families.entries()) {
      const pair = [answers[2 * i], answers[2 * i + 1]];
      assert.deepEqual(pair.map((r) => r.status).sort(), [200, 409], JSON.stringify(pair.map((r) => r.body)));
      assert.equal(pair.find((r) => r.status === 409)!.headers.get("x-error-reason"), "ROLLBACK_GUARD");
      const rows = await championsOf(family);
      assert.deepEqual(rows.map((r) => r.registry_status), ["challenger", "champion"], family);
      assert.equal(rows[1].id, pair.find((r) => r.status === 200)!.body.model.id);
    }
  });

  test("in the default family (models without one, spec 4.12) too: one champion, whichever move comes second demotes or is refused", async () => {
    // The default family is one per tenant, so each round has a tenant of its own.
    for (const bypassRollbackGuard of [true, false]) {
      const tenants = await Promise.all(Array.from({ length: ROUNDS }, (_, i) => svc.createTenant(`default-${bypassRollbackGuard}-${i}`)));
      const pairs = await Promise.all(tenants.map(async (t) => {
        const ids: string[] = [];
        for (const key of ["plain-a", "plain-b"]) {
          const created = await rest(svc.baseUrl, "POST", "/api/v1/algorithm-models", { key: t.apiKey, body: { name: key, key, type: "adaptive" } });
          assert.equal(created.status, 201, JSON.stringify(created.body));
          const staged = await rest(svc.baseUrl, "POST", `/api/v1/algorithm-models/${created.body.id}/promote`, { key: t.apiKey, body: { toStatus: "challenger" } });
          assert.equal(staged.status, 200, JSON.stringify(staged.body));
          ids.push(created.body.id);
        }
        return ids;
      }));
      const answers = await Promise.all(
        pairs.flatMap(([a, b], i) => [
          rest(svc.baseUrl, "POST", `/api/v1/algorithm-models/${a}/promote`, { key: tenants[i].apiKey, body: { toStatus: "champion", bypassRollbackGuard } }),
          rest(child.baseUrl, "POST", `/api/v1/algorithm-models/${b}/promote`, { key: tenants[i].apiKey, body: { toStatus: "champion", bypassRollbackGuard } }),
        ]),
      );
      for (const [i, t] of tenants.entries()) {
        const pair = [answers[2 * i], answers[2 * i + 1]];
        const statuses = pair.map((r) => r.status).sort();
        assert.deepEqual(statuses, bypassRollbackGuard ? [200, 200] : [200, 409], JSON.stringify(pair.map((r) => r.body)));
        const [rows] = await svc.running.foundation.db.query(
          "SELECT id, family, registry_status FROM algorithm_models WHERE tenant_id = $1 ORDER BY registry_status",
          { bind: [t.tenantId] },
        );
        const models = rows as Array<{ id: string; family: string; registry_status: string }>;
        assert.deepEqual(models.map((r) => [r.registry_status, r.family]), [["challenger", "default"], ["champion", "default"]], `tenant ${i}`);
        const holder = bypassRollbackGuard ? pair.find((r) => r.body.demoted)! : pair.find((r) => r.status === 200)!;
        assert.equal(holder.body.model.id, models[1].id, `tenant ${i}: the move that holds is the one that answered so`);
      }
    }
  });
});

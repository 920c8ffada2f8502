import { test, after, describe } from "node:test";
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import { randomUUID } from "node:crypto";
import type { Sequelize } from "sequelize";
import { createSequelize } from "../../src/platform/db.js";
import { migrate } from "../../src/platform/migrator.js";
import { migrations } from "../../src/migrations/index.js";
import { createEmptyTestDatabase } from "../support/database.js";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";

/**
 * Migrations never destroy user data: traces written before 0006 (the explanation itself, in the
 * shape of spec 2.16) survive the upgrade and are served by the trace routes.
 */
let db: Sequelize | undefined;
let svc: TestService | undefined;
after(async () => {
  await db?.close();
  await svc?.stop();
});

/** A trace as the code before 0006 wrote it (its toTraceRow), for one offer returned and one refused. */
function explanationOfThatTime(offerId: string, refusedId: string) {
  return {
    scoringResults: [{ offerId, score: 0.62, modelId: "default", modelType: "formula", explanations: [{ field: "priority", contribution: 0.3 }] }],
    selectedOffers: [{ offerId, name: "Gold card", score: 0.62, rank: 1 }],
    qualificationResults: [{ offerId, qualified: true }, { offerId: refusedId, qualified: false, reason: "eligibility" }],
    contactPolicyResults: [{ offerId, allowed: true }],
    rejectedOffers: [{ offerId: refusedId, stage: "qualification", reason: "eligibility" }],
    rankingWeights: { score: 1, priority: 0.2 },
    flowId: "default",
    modelKey: null,
    inputs: { customerId: "c-1", customer: { tier: "gold" }, context: {}, channel: null, placements: [], now: "2026-01-01T00:00:00.000Z", seed: "s", counters: {}, adaptiveCounts: {} },
  };
}

describe("migration 0006 on a database holding traces", () => {
  test("traces in the old shape survive the upgrade and are read through the API", async () => {
    const url = await createEmptyTestDatabase();
    db = createSequelize(url, { poolMax: 2 });
    const upTo0005 = migrations.slice(0, migrations.findIndex((m) => m.name === "0006-trace-records"));
    assert.deepEqual((await migrate(db, upTo0005)).at(-1), "0005-outcomes");

    const tenantId = randomUUID();
    const traceId = randomUUID();
    const recommendationId = randomUUID();
    const [offerId, refusedId] = [randomUUID(), randomUUID()];
    await db.query("INSERT INTO tenants (id, name) VALUES ($1, 'before 0006')", { bind: [tenantId] });
    await db.query(
      `INSERT INTO decision_traces (tenant_id, id, recommendation_id, customer_id, flow_id, degraded_scoring, selected_count,
         rejected_count, trace, inputs_hash, policy_version_hash, created_at)
       VALUES ($1, $2, $3, 'c-1', NULL, false, 1, 1, $4, 'inputs-hash-0005', 'policy-hash-0005', '2026-01-01T00:00:00Z')`,
      { bind: [tenantId, traceId, recommendationId, gzipSync(JSON.stringify(explanationOfThatTime(offerId, refusedId)))] },
    );

    assert.ok((await migrate(db, migrations)).includes("0006-trace-records"));
    await db.close();
    db = undefined;

    svc = await startTestService({}, url);
    const viewer = await svc.createUser(tenantId, "viewer");
    const list = await rest(svc.baseUrl, "GET", "/api/v1/decision-traces?customerId=c-1", { key: viewer.apiKey });
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.deepEqual(list.body.data.map((t: { id: string }) => t.id), [traceId]);

    for (const id of [traceId, recommendationId]) {
      const trace = await rest(svc.baseUrl, "GET", `/api/v1/decision-traces/${id}`, { key: viewer.apiKey });
      assert.equal(trace.status, 200, JSON.stringify(trace.body));
      assert.equal(trace.body.id, traceId);
      assert.equal(trace.body.recommendationId, recommendationId);
      assert.equal(trace.body.customerId, "c-1");
      assert.deepEqual(trace.body.selectedOffers, [{ offerId, name: "Gold card", score: 0.62, rank: 1 }]);
      assert.deepEqual(trace.body.rejectedOffers, [{ offerId: refusedId, stage: "qualification", reason: "eligibility" }]);
      assert.equal(trace.body.qualificationResults.length, 2);
      assert.equal(trace.body.scoringResults[0].explanations[0].field, "priority");
      assert.deepEqual(trace.body.rankingWeights, { score: 1, priority: 0.2 });
      assert.equal(trace.body.inputs.customer.tier, "gold");
      assert.equal(trace.body.inputsHash, "inputs-hash-0005");
      assert.equal(trace.body.policyVersionHash, "policy-hash-0005");
      assert.equal(trace.body.createdAt, "2026-01-01T00:00:00Z");
    }
  });
});

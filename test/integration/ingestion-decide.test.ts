import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startIngestionHarness, type IngestionHarness } from "../support/ingestion-harness.js";

/** A quota small enough to run out within the test (spec 1: batch pipeline decisions count). */
const QUOTA = 5;
let h: IngestionHarness;

before(async () => {
  h = await startIngestionHarness({ decisionQuota: QUOTA });
});
after(() => h.close());

describe("the decide node: batch decisions (spec 1; docs/ingestion.md, decide)", () => {
  test("each input row is a Recommend through the flow, counted against the quota; rows per ranked offer go to the target", async () => {
    const offers = [];
    for (const priority of [10, 20, 30]) {
      const res = await h.call("POST", "/api/v1/offers", { name: `offer-${priority}`, status: "active", priority, eligibility: { all: [{ attribute: "customer.segment", op: "neq", value: "blocked" }] } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      offers.push(res.body.id);
    }
    const flow = await h.call("POST", "/api/v1/decision-flows", {
      name: "batch",
      key: "batch",
      status: "active",
      config: { nodes: [{ type: "candidates", offerIds: offers }, { type: "rank", count: 3 }] },
      autoAssemble: false,
    });
    assert.equal(flow.status, 201, JSON.stringify(flow.body));
    const schema = await h.call("POST", "/api/v1/schemas", {
      name: "next_best",
      fields: [
        { name: "customerId", dataType: "varchar", length: 64, isPrimaryKey: true },
        { name: "rank", dataType: "integer", isPrimaryKey: true },
        { name: "offerId", dataType: "text" },
        { name: "score", dataType: "numeric" },
        { name: "recommendationId", dataType: "text" },
      ],
    });
    assert.equal(schema.status, 201, JSON.stringify(schema.body));
    const connectorId = (await h.call("POST", "/api/v1/connectors", h.connectorBody())).body.id;
    const pipeline = await h.call("POST", "/api/v1/pipelines", {
      name: "nba-batch",
      connectorId,
      ir: {
        nodes: [
          { id: "src", kind: "source", config: { path: "batch/", format: "csv", ordering: "latest_by_mtime" } },
          { id: "decide", kind: "decide", input: "src", flowId: "batch", limit: 2 },
          { id: "out", kind: "target", input: "decide", schema: "next_best", loadMode: "upsert", upsertKey: ["customerId", "rank"] },
        ],
      },
    });
    assert.equal(pipeline.status, 201, JSON.stringify(pipeline.body));
    await h.put("batch/1.csv", "customerId,segment\nb1,retail\nb2,retail\nb3,blocked\n");
    const res = await h.call("POST", `/api/v1/pipelines/${pipeline.body.id}/run`, {});
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true, JSON.stringify(res.body));
    const decide = res.body.nodeResults.find((r: { id: string }) => r.id === "decide");
    assert.equal(decide.meta.decisions, 3);
    assert.equal(decide.rowsOut, 4, "two offers each for b1 and b2; b3 is eligible for none");
    const table = `"${h.dataSchema(h.admin.tenantId)}".ds_next_best`;
    const loaded = await h.svc.sql(`SELECT "customerId", rank, "offerId", "recommendationId" FROM ${table} ORDER BY 1, 2`);
    assert.deepEqual(loaded.map((r) => [r.customerId, r.rank]), [["b1", 1], ["b1", 2], ["b2", 1], ["b2", 2]]);
    for (const r of loaded) assert.ok(offers.includes(r.offerId));
    const [rec] = await h.svc.sql("SELECT customer_id FROM recommendations WHERE tenant_id = $1 AND id = $2", [h.admin.tenantId, loaded[0].recommendationId]);
    assert.equal(rec.customer_id, "b1", "each decision is stored like a Recommend");
    const usage = await h.call("GET", "/api/v1/workspace/usage");
    assert.equal(usage.body.decisionsUsed, 2, "decisions with offers count, as Recommend counts them");

    // The quota runs out inside the next batch: the run fails at the decide node, and nothing of it is loaded.
    await new Promise((r) => setTimeout(r, 20));
    await h.put("batch/2.csv", "customerId,segment\nc1,retail\nc2,retail\nc3,retail\nc4,retail\n");
    const over = await h.call("POST", `/api/v1/pipelines/${pipeline.body.id}/run`, {});
    assert.equal(over.body.ok, false);
    assert.equal(over.body.failedNodeId, "decide");
    assert.match(over.body.error, /DECISION_QUOTA_EXHAUSTED/);
    assert.equal((await h.call("GET", "/api/v1/workspace/usage")).body.decisionsUsed, QUOTA);
    assert.equal((await h.svc.sql(`SELECT 1 FROM ${table} WHERE "customerId" LIKE 'c%'`)).length, 0);
  });
});

describe("workspace reset (spec 1)", () => {
  test("deletes connectors, schemas with their tables, pipelines and runs of the tenant only", async () => {
    const theirs = await h.call("POST", "/api/v1/schemas", { name: "kept", fields: [{ name: "a", dataType: "text" }] }, h.other.apiKey);
    assert.equal(theirs.status, 201);
    assert.ok((await h.svc.sql("SELECT 1 FROM ingestion_runs WHERE tenant_id = $1", [h.admin.tenantId])).length > 0);
    const res = await h.call("POST", "/api/v1/workspace/reset", { confirm: h.admin.tenantId });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    for (const path of ["/api/v1/connectors", "/api/v1/schemas", "/api/v1/pipelines"]) assert.deepEqual((await h.call("GET", path)).body.data, [], path);
    for (const table of ["ingestion_runs", "ingestion_pipeline_ir", "ingestion_connectors"]) {
      assert.equal((await h.svc.sql(`SELECT 1 FROM ${table} WHERE tenant_id = $1`, [h.admin.tenantId])).length, 0, table);
    }
    assert.equal((await h.svc.sql("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [h.dataSchema(h.admin.tenantId)])).length, 0);
    assert.equal((await h.svc.sql("SELECT 1 FROM information_schema.tables WHERE table_schema = $1", [h.dataSchema(h.other.tenantId)])).length, 1, "the other tenant keeps its table");
  });
});

describe("tenant deletion (migration 0027-ingestion-tenant-schemas)", () => {
  test("deleting a tenant row drops its ingest_ schema with its tables, in the deleting transaction; other tenants keep theirs", async () => {
    const gone = await h.svc.createTenant("gone");
    const kept = await h.call("POST", "/api/v1/schemas", { name: "kept_rows", fields: [{ name: "a", dataType: "text" }] }, h.other.apiKey);
    assert.equal(kept.status, 201, JSON.stringify(kept.body));
    const res = await h.call("POST", "/api/v1/schemas", { name: "customers", entityType: "customer", fields: [{ name: "customer_id", dataType: "text", isPrimaryKey: true }] }, gone.apiKey);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const schema = h.dataSchema(gone.tenantId);
    await h.svc.sql(`INSERT INTO "${schema}"."ds_customers" (customer_id) VALUES ('c1')`);
    const tables = (s: string) => h.svc.sql("SELECT table_name FROM information_schema.tables WHERE table_schema = $1", [s]);
    assert.equal((await tables(schema)).length, 1);

    // A delete that rolls back keeps the schema: the drop is part of the deleting transaction.
    const db = h.svc.running.foundation.db;
    await assert.rejects(
      db.transaction(async (transaction) => {
        await db.query("DELETE FROM tenants WHERE id = $1", { bind: [gone.tenantId], transaction });
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.equal((await tables(schema)).length, 1, "a rolled-back delete keeps the tables");

    await h.svc.sql("DELETE FROM tenants WHERE id = $1", [gone.tenantId]);
    assert.equal((await h.svc.sql("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [schema])).length, 0);
    assert.equal((await h.svc.sql("SELECT 1 FROM ingestion_schemas WHERE tenant_id = $1", [gone.tenantId])).length, 0);
    const theirs = "SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'ds_kept_rows'";
    assert.equal((await h.svc.sql(theirs, [h.dataSchema(h.other.tenantId)])).length, 1, "the other tenant keeps its table");
  });
});

describe("GDPR erasure (spec 4.13) of loaded customer tables", () => {
  test("erases the customer's rows from every customer table of the tenant, by its key, and verifies them gone", async () => {
    const tenant = await h.svc.createTenant("erasure");
    const create = (key: string, body: Record<string, unknown>) => h.call("POST", "/api/v1/schemas", body, key);
    const profile = { name: "profile", entityType: "customer", fields: [{ name: "customer_id", dataType: "varchar", length: 20, isPrimaryKey: true }, { name: "segment", dataType: "text" }] };
    assert.equal((await create(tenant.apiKey, profile)).status, 201);
    // A numeric key cannot hold "alice": that table is skipped, not a failed cast.
    assert.equal((await create(tenant.apiKey, { name: "numbers", entityType: "customer", fields: [{ name: "customer_id", dataType: "integer", isPrimaryKey: true }] })).status, 201);
    // Not a customer table: a row naming alice there is the tenant's own data, not a customer row.
    assert.equal((await create(tenant.apiKey, { name: "log", fields: [{ name: "customer_id", dataType: "text" }] })).status, 201);
    assert.equal((await create(h.other.apiKey, { name: "profile_other", entityType: "customer", fields: [{ name: "customer_id", dataType: "text", isPrimaryKey: true }] })).status, 201);
    const mine = h.dataSchema(tenant.tenantId);
    const theirs = h.dataSchema(h.other.tenantId);
    await h.svc.sql(`INSERT INTO "${mine}"."ds_profile" VALUES ('alice', 'gold'), ('bob', 'silver')`);
    await h.svc.sql(`INSERT INTO "${mine}"."ds_numbers" VALUES (7)`);
    await h.svc.sql(`INSERT INTO "${mine}"."ds_log" (customer_id) VALUES ('alice')`);
    await h.svc.sql(`INSERT INTO "${theirs}"."ds_profile_other" VALUES ('alice')`);

    const res = await h.call("DELETE", "/api/v1/export/full?customerId=alice", undefined, tenant.apiKey);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.verified, true);
    assert.equal(res.body.removed.loadedCustomerRows, 1);
    const ids = async (table: string) => (await h.svc.sql(`SELECT customer_id::text AS id FROM ${table} ORDER BY 1`)).map((r) => r.id);
    assert.deepEqual(await ids(`"${mine}"."ds_profile"`), ["bob"]);
    assert.deepEqual(await ids(`"${mine}"."ds_numbers"`), ["7"]);
    assert.deepEqual(await ids(`"${mine}"."ds_log"`), ["alice"]);
    assert.deepEqual(await ids(`"${theirs}"."ds_profile_other"`), ["alice"], "another tenant's customer of the same id is kept");
  });
});

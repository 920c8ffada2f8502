import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { startIngestionHarness, type IngestionHarness } from "../support/ingestion-harness.js";

/**
 * What a stop of the service does to ingestion runs in flight (docs/ingestion.md, "What a stop does
 * to a run"): they are aborted, recorded as failed before the pools close, and their callers get
 * that answer; the stop does not wait for them to end on their own.
 */

let h: IngestionHarness;

const STOPPED = "stopped: the service shut down";
const FILES = 20;
const ROWS_PER_FILE = 50_000;

before(async () => {
  h = await startIngestionHarness();
});
after(() => h.close());

test("a stop aborts the runs in flight (a waiting source, a COPY under way, a load statement under way): recorded as failed, rolled back, answered, and the stop is prompt", async () => {
  const connectorId = (await h.call("POST", "/api/v1/connectors", h.connectorBody())).body.id;
  const tableOf = async (name: string) => {
    const res = await h.call("POST", "/api/v1/schemas", { name, entityType: "custom", fields: [{ name: "customer_id", dataType: "varchar", length: 32, isPrimaryKey: true }, { name: "email", dataType: "text" }] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return `"${h.dataSchema(h.admin.tenantId)}"."${res.body.tableName}"`;
  };
  const tables = { big: await tableOf("big"), small: await tableOf("small") };
  const make = async (name: string, schema: string, src: Record<string, unknown>) => {
    const res = await h.call("POST", "/api/v1/pipelines", {
      name,
      connectorId,
      ir: {
        nodes: [{ id: "src", kind: "source", config: { format: "csv", pattern: { type: "glob", value: "*.csv" }, ...src } }, { id: "load", kind: "target", input: "src", schema, loadMode: "upsert", upsertKey: ["customer_id"] }],
        // Retries are on: a stopped run must not use them.
        errorHandling: { retry: { maxAttempts: 3, backoff: "fixed", initialDelayMs: 10 } },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.id as string;
  };
  // Left alone, it would wait 10 × 3 s for a file.
  const waiting = await make("waiting", "big", { path: "none/", waitPolicy: { maxRetries: 10, intervalMinutes: 0.05, onMissAction: "fail" } });
  // A million rows, about ten seconds of reading, copying and applying on a small machine.
  for (let f = 0; f < FILES; f++) {
    const lines = Array.from({ length: ROWS_PER_FILE }, (_, i) => `c${f}-${i},someone-${i}@example.com`);
    await h.put(`big/part-${String(f).padStart(2, "0")}.csv`, `customer_id,email\n${lines.join("\n")}\n`);
  }
  const copying = await make("copying", "big", { path: "big/", ordering: "all_by_name" });
  // A small file whose load waits for a table lock that this test holds: a load statement that never ends on its own.
  await h.put("small/a.csv", "customer_id,email\ns1,a@example.com\n");
  const applying = await make("applying", "small", { path: "small/" });
  const holder = new pg.Client({ connectionString: h.svc.config.databaseUrl! });
  await holder.connect();
  await holder.query("BEGIN");
  await holder.query(`LOCK TABLE ${tables.small} IN ACCESS EXCLUSIVE MODE`);

  try {
    const answers = [waiting, copying, applying].map((id) => h.call("POST", `/api/v1/pipelines/${id}/run`, {}).then((res) => ({ res, at: Date.now() })));
    // All in flight: rows of the big files are arriving in a COPY, and the small load waits on its LOCK TABLE.
    for (let i = 0; ; i++) {
      const [{ runs, copied, locked }] = await h.svc.sql(
        `SELECT (SELECT count(*) FROM ingestion_runs WHERE finished_at IS NULL)::int AS runs,
                (SELECT coalesce(max(tuples_processed), 0) FROM pg_stat_progress_copy WHERE datname = current_database())::int AS copied,
                (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'LOCK TABLE%')::int AS locked`,
      );
      if (runs === 3 && copied > 0 && locked === 1) break;
      assert.ok(i < 400, `runs in flight: ${runs}, rows copied: ${copied}, loads waiting: ${locked}`);
      await new Promise((r) => setTimeout(r, 10));
    }

    const stopAt = Date.now();
    const stopped = h.svc.stop();
    // A stop that waits for the load would wait for this test's lock: let it go, and fail.
    if (!(await Promise.race([stopped.then(() => true), sleep(5000, false)]))) {
      await holder.query("COMMIT");
      await stopped;
    }
    const stopMs = Date.now() - stopAt;
    // Under the test's SHUTDOWN_GRACE_MS (2000): nothing had to be cut off when a wait ran out.
    assert.ok(stopMs < 1500, `the stop did not wait for the runs (${stopMs} ms)`);

    const [w, c, a] = await Promise.all(answers);
    for (const { res, at } of [w, c, a]) {
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.ok, false);
      assert.equal(res.body.error, STOPPED);
      assert.ok(at <= stopAt + stopMs, "the caller is answered before the service is gone");
    }
    const read = c.res.body.nodeResults.find((r: { id: string }) => r.id === "src");
    assert.ok(read.rowsOut < FILES * ROWS_PER_FILE, `stopped mid-read (${read.rowsOut} rows read)`);
    assert.equal(a.res.body.failedNodeId, "load", "stopped in the load");
  } finally {
    await holder.query("COMMIT").catch(() => undefined);
  }

  // The service's pools are closed: a connection of our own.
  try {
    const { rows } = await holder.query("SELECT pipeline_id, ok, error, attempts, finished_at FROM ingestion_runs");
    assert.equal(rows.length, 3, "one run each");
    for (const row of rows) {
      assert.equal(row.ok, false);
      assert.equal(row.error, STOPPED);
      assert.equal(row.attempts, 1, "no retry after a stop");
      assert.ok(row.finished_at instanceof Date, "recorded before the pools closed");
    }
    for (const table of Object.values(tables)) assert.equal(Number((await holder.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n), 0, `${table}: rolled back`);
    const alerts = await holder.query("SELECT details->>'pipelineId' AS pipeline FROM health_alerts WHERE status = 'open' AND key LIKE 'pipeline:%:failed' ORDER BY 1");
    assert.deepEqual(alerts.rows.map((r) => r.pipeline), [waiting, copying, applying].sort(), "each raised its failed alert, as any failed run");
  } finally {
    await holder.end();
  }
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { startIngestionHarness, type IngestionHarness } from "../support/ingestion-harness.js";
import { rest } from "../support/clients.js";
import type { ScheduledJob } from "../../src/scheduling/scheduled-job.js";

/**
 * Runs whose process stopped before finishing them (docs/ingestion.md, "Runs whose process
 * stopped"): a lease renewed while the run goes on, and the `ingestion-expired-runs` sweep that
 * finishes a run whose lease ran out as failed, once.
 */

let h: IngestionHarness;
let connectorId: string;
let sweep: ScheduledJob;
let schemaName: string;
let n = 0;

const CRON_SECRET = "expired-runs-cron-secret";
/** Short, so that a run not renewed expires within the test; renewed every 200 ms. */
// Renewed every 500 ms: long enough that a loaded CI machine's stalls do not let a live run's lease run out.
const LEASE_MS = 1500;
const EXPIRED = "the process running it stopped before it finished (lease expired)";

const source = (path: string, config: Record<string, unknown> = {}) => ({ id: "src", kind: "source", config: { path, format: "csv", pattern: { type: "glob", value: "*.csv" }, ...config } });
const target = () => ({ id: "load", kind: "target", input: "src", schema: schemaName, loadMode: "upsert", upsertKey: ["customer_id"] });

async function pipeline(nodes: unknown[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.call("POST", "/api/v1/pipelines", { name: `p${++n}`, connectorId, ir: { kind: "pipeline", version: "1.0", id: `p${n}`, nodes, ...extra } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** A run row as a process that died mid-run leaves it: started, never finished. */
async function orphan(pipelineId: string, lease: string | null, startedAgo: string): Promise<string> {
  const id = randomUUID();
  await h.svc.sql(
    `INSERT INTO ingestion_runs (tenant_id, id, pipeline_id, ir_version, trigger, started_at, lease_until)
     VALUES ($1, $2, $3, 1, 'schedule', now() - $4::interval, now() + $5::interval)`,
    [h.admin.tenantId, id, pipelineId, startedAgo, lease],
  );
  return id;
}

const runRow = async (id: string) => (await h.svc.sql("SELECT ok, error, failed_node_id, finished_at, dead_lettered, lease_until > now() AS leased FROM ingestion_runs WHERE id = $1", [id]))[0];
const deadLetters = async (runId: string) => Number((await h.svc.sql("SELECT count(*) AS n FROM ingestion_dead_letters WHERE run_id = $1", [runId]))[0].n);
const failedAlerts = async (pipelineId: string) =>
  (await h.call("GET", "/api/v1/system-health")).body.alerts.filter((a: { severity: string; details: { pipelineId?: string } }) => a.details.pipelineId === pipelineId && a.severity === "error");

before(async () => {
  h = await startIngestionHarness({ cronSecret: CRON_SECRET, runLeaseMs: LEASE_MS });
  connectorId = (await h.call("POST", "/api/v1/connectors", h.connectorBody())).body.id;
  schemaName = "leased";
  const res = await h.call("POST", "/api/v1/schemas", { name: schemaName, entityType: "custom", fields: [{ name: "customer_id", dataType: "varchar", length: 32, isPrimaryKey: true }] });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  sweep = h.svc.running.services.jobs.find((j) => j.name === "ingestion-expired-runs")!;
  assert.ok(sweep, "the ingestion domain registers its sweep");
});
after(() => h.close());

describe("runs whose process stopped (docs/ingestion.md)", () => {
  test("the sweep finishes a run whose lease ran out as failed, once, with a dead letter and the failed alert; runs still leased are left", async () => {
    const withDlq = await pipeline([source("never/"), target()], { errorHandling: { dlq: { enabled: true } } });
    const plain = await pipeline([source("never/"), target()]);
    const expired = await orphan(withDlq, "-1 minute", "2 minutes");
    // From before leases (migration 0034): taken once it started long ago, and not before.
    const legacyOld = await orphan(plain, null, "7 hours");
    const legacyRecent = await orphan(plain, null, "10 minutes");
    const leased = await orphan(plain, "1 hour", "2 minutes");

    const slot = new Date();
    // Two processes sweeping at once: a run finished twice would insert its dead letter twice and fail.
    await Promise.all([sweep.run(slot), sweep.run(slot)]);
    const first = await runRow(expired);
    assert.equal(first.ok, false);
    assert.equal(first.error, EXPIRED);
    assert.equal(first.failed_node_id, null);
    assert.ok(first.finished_at instanceof Date, JSON.stringify(first));
    assert.equal(first.dead_lettered, true, "the pipeline's dlq setting applies as to any failed run");
    assert.equal(await deadLetters(expired), 1);
    await sleep(20);
    await sweep.run(new Date());
    assert.equal((await runRow(expired)).finished_at.getTime(), first.finished_at.getTime(), "a later sweep does not finish it again");
    assert.equal(await deadLetters(expired), 1);

    const old = await runRow(legacyOld);
    assert.deepEqual([old.ok, old.error, old.dead_lettered], [false, EXPIRED, false]);
    assert.ok(old.finished_at);
    for (const id of [legacyRecent, leased]) assert.equal((await runRow(id)).finished_at, null, "not yet expired: not swept");

    const listed = (await h.call("GET", `/api/v1/pipelines/${withDlq}/runs`)).body.data;
    assert.equal(listed[0].id, expired);
    assert.equal(listed[0].ok, false);
    assert.equal(listed[0].error, EXPIRED);
    assert.equal(listed[0].deadLettered, true);
    assert.ok(listed[0].finishedAt);

    const [alert] = await failedAlerts(withDlq);
    assert.ok(alert, "the pipeline's failed health alert is raised");
    assert.equal(alert.details.runId, expired);
    assert.match(alert.message, /lease expired/);
    assert.equal((await failedAlerts(plain))[0]?.details.runId, legacyOld);
  });

  test("the tick route runs the sweep (SCHEDULER=off)", async () => {
    const tick = await rest(h.svc.baseUrl, "POST", "/api/cron/tick", { bearer: CRON_SECRET });
    assert.equal(tick.status, 200, JSON.stringify(tick.body));
    assert.ok(tick.body.runs.some((r: { job: string }) => r.job === "ingestion-expired-runs"), JSON.stringify(tick.body.runs));
  });

  test("a live run renews its lease: a sweep after several lease lengths leaves it, and it records its own outcome", async () => {
    // No file: the source waits 6 s (waitPolicy) and then fails on its own.
    const id = await pipeline([source("live/", { waitPolicy: { maxRetries: 1, intervalMinutes: 0.1, onMissAction: "fail" } }), target()], { errorHandling: { dlq: { enabled: true } } });
    const request = h.call("POST", `/api/v1/pipelines/${id}/run`, {});
    let runId: string | undefined;
    for (let i = 0; i < 100 && !runId; i++) runId = (await h.svc.sql("SELECT id FROM ingestion_runs WHERE pipeline_id = $1", [id]))[0]?.id;
    assert.ok(runId);
    await sleep(LEASE_MS * 2.5);
    assert.equal((await runRow(runId)).leased, true, "renewed past its first lease");
    await sweep.run(new Date());
    assert.equal((await runRow(runId)).finished_at, null, "a live run is not swept");
    const done = await request;
    assert.equal(done.status, 200);
    assert.equal(done.body.ok, false);
    assert.match(done.body.error, /no file matched/);
    const row = await runRow(runId);
    assert.match(row.error, /no file matched/, "the runner's outcome, not the sweep's");
    assert.ok(row.finished_at);
    assert.equal(await deadLetters(runId), 1);
  });

  test("a run the sweep finished while its process was stalled stops at its next renewal, and its outcome stays the sweep's", async () => {
    // The source would wait 9 s for a file.
    const id = await pipeline([source("stalled/", { waitPolicy: { maxRetries: 1, intervalMinutes: 0.15, onMissAction: "fail" } }), target()], { errorHandling: { dlq: { enabled: true } } });
    const started = Date.now();
    const request = h.call("POST", `/api/v1/pipelines/${id}/run`, {});
    let runId: string | undefined;
    for (let i = 0; i < 100 && !runId; i++) runId = (await h.svc.sql("SELECT id FROM ingestion_runs WHERE pipeline_id = $1", [id]))[0]?.id;
    assert.ok(runId);
    // As if its heartbeats had not reached the database for a while.
    await h.svc.sql("UPDATE ingestion_runs SET lease_until = now() - interval '1 second' WHERE id = $1", [runId]);
    await sweep.run(new Date());
    const done = await request;
    assert.ok(Date.now() - started < 5000, `stopped at its next renewal, not after its 9 s wait (${Date.now() - started} ms)`);
    assert.equal(done.status, 200);
    assert.equal(done.body.ok, false);
    assert.match(done.body.error, /lease/);
    const row = await runRow(runId);
    assert.equal(row.error, EXPIRED, "finished once, by the sweep");
    assert.equal(await deadLetters(runId), 1);
  });
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { startIngestionHarness, type IngestionHarness } from "../support/ingestion-harness.js";
import { rest } from "../support/clients.js";
import { startTestService } from "../support/service.js";

let h: IngestionHarness;
let connectorId: string;
let n = 0;

const CRON_SECRET = "ingestion-cron-secret";

const fields = [
  { name: "customer_id", dataType: "varchar", length: 32, isPrimaryKey: true },
  { name: "email", dataType: "text" },
  { name: "age", dataType: "integer" },
  { name: "balance", dataType: "numeric", precision: 12, scale: 2 },
  { name: "updated_at", dataType: "timestamp" },
];

/** A new customer-like schema; its table name. */
async function schema(extra: Record<string, unknown> = {}): Promise<{ id: string; name: string; table: string }> {
  const name = `c${++n}`;
  const res = await h.call("POST", "/api/v1/schemas", { name, entityType: "custom", fields, ...extra });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.id, name, table: `"${h.dataSchema(h.admin.tenantId)}"."${res.body.tableName}"` };
}

const source = (path: string, config: Record<string, unknown> = {}) => ({ id: "src", kind: "source", config: { path, format: "csv", pattern: { type: "glob", value: "*.csv*" }, ...config } });
const target = (schemaName: string, extra: Record<string, unknown> = {}) => ({ id: "load", kind: "target", input: "src", schema: schemaName, loadMode: "upsert", upsertKey: ["customer_id"], ...extra });

async function pipeline(nodes: unknown[], extra: Record<string, unknown> = {}): Promise<string> {
  const res = await h.call("POST", "/api/v1/pipelines", { name: `p${++n}`, connectorId, ir: { kind: "pipeline", version: "1.0", id: `p${n}`, nodes, ...extra } });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

async function run(id: string) {
  const res = await h.call("POST", `/api/v1/pipelines/${id}/run`, {});
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body;
}

const rows = (table: string, order = "customer_id") => h.svc.sql(`SELECT customer_id, email, age, balance::text AS balance FROM ${table} ORDER BY ${order}`);
const csv = (lines: string[]) => `customer_id,email,age,balance,updated_at\n${lines.join("\n")}\n`;

before(async () => {
  h = await startIngestionHarness({ cronSecret: CRON_SECRET });
  connectorId = (await h.call("POST", "/api/v1/connectors", h.connectorBody())).body.id;
});
after(() => h.close());

describe("the runner: sources and load modes (spec 4.20)", () => {
  test("upsert streams CSV (plain and gzip) through a transform into the table, later rows win; the run is recorded", async () => {
    const s = await schema();
    await h.put("upsert/a.csv", csv(["c1,a@x.io,30,10.50,2025-01-01T00:00:00Z", "c2,b@x.io,41,0,2025-01-01T00:00:00Z"]));
    await h.put("upsert/b.csv.gz", gzipSync(csv(["c3,c@x.io,,1.25,2025-01-02T00:00:00Z", "c1,a2@x.io,31,11,2025-01-02T00:00:00Z"])));
    await h.put("upsert/ignored.txt", "not matched by the pattern");
    const id = await pipeline([
      source("upsert/"),
      { id: "fix", kind: "transform", input: "src", ops: [{ type: "expression", outputField: "email", formula: "upper(email)" }, { type: "expression", outputField: "age", formula: "coalesce(age, 18)" }] },
      { ...target(s.name), input: "fix" },
    ]);
    const first = await run(id);
    assert.equal(first.ok, true, JSON.stringify(first));
    assert.equal(first.irVersion, 1);
    assert.ok(first.runId);
    const byId = Object.fromEntries(first.nodeResults.map((r: { id: string }) => [r.id, r]));
    assert.equal(byId.src.rowsOut, 4, "a JSON number");
    assert.deepEqual(byId.src.meta.files, ["upsert/a.csv", "upsert/b.csv.gz"]);
    assert.equal(byId.fix.rowsOut, 4);
    assert.equal(byId.load.rowsLoaded, 3, "a JSON number");
    assert.deepEqual(await rows(s.table), [
      { customer_id: "c1", email: "A2@X.IO", age: 31, balance: "11.00" },
      { customer_id: "c2", email: "B@X.IO", age: 41, balance: "0.00" },
      { customer_id: "c3", email: "C@X.IO", age: 18, balance: "1.25" },
    ]);
    await h.put("upsert/a.csv", csv(["c2,new@x.io,42,5,2025-01-03T00:00:00Z"]));
    const second = await run(id);
    assert.equal(second.ok, true);
    assert.equal((await rows(s.table))[1].email, "NEW@X.IO");
    const runs = await h.call("GET", `/api/v1/pipelines/${id}/runs`);
    assert.equal(runs.status, 200);
    assert.equal(runs.body.data.length, 2);
    assert.equal(runs.body.data[0].ok, true);
    assert.equal(runs.body.data[0].trigger, "manual");
    assert.equal((await h.call("GET", `/api/v1/pipelines/${id}`)).body.status, "active");
    assert.equal((await h.call("POST", `/api/v1/pipelines/${id}/run`, {}, h.other.apiKey)).status, 404);
  });

  test("a run still going is listed without finishedAt; it gets one when it ends (docs/ingestion.md, long runs)", async () => {
    const s = await schema();
    // No file yet: the source waits 1.2 s (waitPolicy) before it fails, so the run is seen while it goes on.
    const id = await pipeline([source("slow/", { waitPolicy: { maxRetries: 1, intervalMinutes: 0.02, onMissAction: "fail" } }), target(s.name)]);
    const request = h.call("POST", `/api/v1/pipelines/${id}/run`, {});
    const runsOf = async () => (await h.call("GET", `/api/v1/pipelines/${id}/runs`)).body.data;
    let listed = await runsOf();
    for (let i = 0; i < 50 && !listed.length; i++) listed = await runsOf();
    assert.equal(listed.length, 1);
    assert.equal(listed[0].finishedAt, undefined, JSON.stringify(listed[0]));
    assert.ok(listed[0].startedAt);
    const done = await request;
    assert.equal(done.status, 200);
    assert.equal(done.body.ok, false);
    const [finished] = await runsOf();
    assert.ok(done.body.runId);
    assert.equal(finished.id, done.body.runId);
    assert.ok(Date.parse(finished.finishedAt) >= Date.parse(finished.startedAt) + 1000, JSON.stringify(finished));
  });

  test("JSON Lines, by regex pattern", async () => {
    const s = await schema();
    await h.put("jsonl/part-1.jsonl", ['{"customer_id":"j1","email":"j@x.io","age":20,"balance":1.5}', "", '{"customer_id":"j2","age":"21"}'].join("\n"));
    const id = await pipeline([source("jsonl/", { format: "jsonl", pattern: { type: "regex", value: "^part-\\d+\\.jsonl$" } }), target(s.name)]);
    const res = await run(id);
    assert.equal(res.ok, true, JSON.stringify(res));
    assert.deepEqual(await rows(s.table), [
      { customer_id: "j1", email: "j@x.io", age: 20, balance: "1.50" },
      { customer_id: "j2", email: null, age: 21, balance: null },
    ]);
  });

  test("truncate replaces the table's rows in one transaction", async () => {
    const s = await schema();
    await h.svc.sql(`INSERT INTO ${s.table} (customer_id, email) VALUES ('old1', 'o'), ('old2', 'o')`);
    await h.put("truncate/x.csv", csv(["t1,t@x.io,1,1,2025-01-01T00:00:00Z"]));
    const res = await run(await pipeline([source("truncate/"), target(s.name, { loadMode: "truncate", upsertKey: undefined })]));
    assert.equal(res.ok, true, JSON.stringify(res));
    assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["t1"]);
  });

  test("blue_green swaps by rename: a reader during the swap sees the old table or the new one, never a partial one", async () => {
    const s = await schema();
    const file = (count: number, tag: string) => csv(Array.from({ length: count }, (_, i) => `${tag}${i},${tag}@x.io,${i % 90},${i}.5,2025-01-01T00:00:00Z`));
    await h.put("bg/1.csv", file(20_000, "a"));
    const id = await pipeline([source("bg/", { ordering: "latest_by_mtime" }), target(s.name, { loadMode: "blue_green", upsertKey: undefined })]);
    assert.equal((await run(id)).ok, true);
    assert.equal(Number((await h.svc.sql(`SELECT count(*) AS n FROM ${s.table}`))[0].n), 20_000);
    await new Promise((r) => setTimeout(r, 20));
    await h.put("bg/2.csv", file(30_000, "b"));
    const seen = new Set<number>();
    let done = false;
    const reader = (async () => {
      while (!done) {
        const [row] = await h.svc.sql(`SELECT count(*) AS n, count(*) FILTER (WHERE customer_id LIKE 'a%') AS a FROM ${s.table}`);
        seen.add(Number(row.n));
        assert.ok(Number(row.a) === 0 || Number(row.a) === Number(row.n), "one table, never a mix");
      }
    })();
    const res = await run(id);
    done = true;
    await reader;
    assert.equal(res.ok, true, JSON.stringify(res));
    assert.deepEqual(res.nodeResults.find((r: { id: string }) => r.id === "src").meta.files, ["bg/2.csv"]);
    for (const count of seen) assert.ok(count === 20_000 || count === 30_000, `a reader saw ${count} rows`);
    assert.equal(Number((await h.svc.sql(`SELECT count(*) AS n FROM ${s.table}`))[0].n), 30_000);
    const [pk] = await h.svc.sql(`SELECT count(*) AS n FROM pg_index WHERE indrelid = $1::regclass AND indisprimary`, [s.table]);
    assert.equal(Number(pk.n), 1, "the swapped table keeps its primary key");
    assert.equal((await h.svc.sql(`SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename LIKE '%\\_\\_%'`, [h.dataSchema(h.admin.tenantId)])).length, 0, "no leftover tables");
  });

  test("incremental_watermark loads rows past the stored high-water mark only", async () => {
    const s = await schema();
    const id = await pipeline([source("wm/", { ordering: "latest_by_mtime" }), target(s.name, { loadMode: "incremental_watermark", watermarkColumn: "updated_at" })]);
    await h.put("wm/1.csv", csv(["w1,a,1,1,2025-01-01T00:00:00Z", "w2,b,1,1,2025-01-02T00:00:00Z"]));
    const first = await run(id);
    assert.equal(first.ok, true, JSON.stringify(first));
    assert.match(first.nodeResults[1].meta.watermark, /^2025-01-02/);
    await new Promise((r) => setTimeout(r, 20));
    await h.put("wm/2.csv", csv(["w1,changed-but-old,1,1,2025-01-01T12:00:00Z", "w3,c,1,1,2025-01-03T00:00:00Z"]));
    const second = await run(id);
    assert.equal(second.ok, true);
    assert.equal(second.nodeResults[1].rowsLoaded, 1);
    assert.deepEqual((await rows(s.table)).map((r) => [r.customer_id, r.email]), [["w1", "a"], ["w2", "b"], ["w3", "c"]]);
    const [p] = await h.svc.sql("SELECT watermarks FROM ingestion_pipelines WHERE id = $1", [id]);
    assert.match(p.watermarks.load, /^2025-01-03/);
  });

  test("cdc_mirror applies insert, update and delete by key; an unknown operation fails closed with nothing applied", async () => {
    const s = await schema();
    await h.svc.sql(`INSERT INTO ${s.table} (customer_id, email) VALUES ('k1', 'one'), ('k2', 'two'), ('k3', 'three')`);
    const head = "op,customer_id,email,age,balance,updated_at";
    await h.put("cdc/1.csv", [head, "update,k1,uno,,,", "delete,k2,,,,", "insert,k4,four,,,", "U,k4,cuatro,,,"].join("\n"));
    const id = await pipeline([source("cdc/", { ordering: "latest_by_mtime" }), target(s.name, { loadMode: "cdc_mirror" })]);
    const res = await run(id);
    assert.equal(res.ok, true, JSON.stringify(res));
    assert.deepEqual((await rows(s.table)).map((r) => [r.customer_id, r.email]), [["k1", "uno"], ["k3", "three"], ["k4", "cuatro"]]);
    await new Promise((r) => setTimeout(r, 20));
    await h.put("cdc/2.csv", [head, "delete,k1,,,,", "merge,k3,x,,,"].join("\n"));
    const bad = await run(id);
    assert.equal(bad.ok, false);
    assert.equal(bad.failedNodeId, "load");
    assert.match(bad.error, /unknown operation "merge"/);
    assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["k1", "k3", "k4"], "the delete before it was not applied either");
  });
});

describe("integrity, atomicity and the empty-source rule", () => {
  const hex = (body: string, algorithm = "sha256") => createHash(algorithm).update(body).digest("hex");

  test("sidecars: a good one loads; a bad one with fail moves the file to the failure folder and fails closed", async () => {
    const s = await schema();
    const good = csv(["i1,a,1,1,2025-01-01T00:00:00Z"]);
    await h.put("int1/staging/good.csv", good);
    await h.put("int1/staging/good.csv.sha256", `${hex(good)}  good.csv\n`);
    const atomicity = { stagingFolder: "int1/staging/", successFolder: "int1/done/{date}/", failureFolder: "int1/failed/" };
    const id = await pipeline([source("", { atomicity, integrity: { algorithm: "sha256", sidecar: true, onMismatch: "fail" } }), target(s.name)]);
    const ok = await run(id);
    assert.equal(ok.ok, true, JSON.stringify(ok));
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual(await h.keys("int1/done/"), [`int1/done/${today}/good.csv`]);
    assert.ok(!(await h.keys("int1/staging/")).includes("int1/staging/good.csv"));

    const bad = csv(["i2,b,1,1,2025-01-01T00:00:00Z"]);
    await h.put("int1/staging/bad.csv", bad);
    await h.put("int1/staging/bad.csv.sha256", hex("something else"));
    const failed = await run(id);
    assert.equal(failed.ok, false);
    assert.equal(failed.failedNodeId, "src");
    assert.match(failed.error, /integrity/);
    assert.deepEqual(await h.keys("int1/failed/"), ["int1/failed/bad.csv"]);
    assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["i1"]);
  });

  test("onMismatch skip sets the bad file aside and loads the rest; warn loads it with a warning", async () => {
    const s = await schema();
    const good = csv(["s1,a,1,1,2025-01-01T00:00:00Z"]);
    const bad = csv(["s2,b,1,1,2025-01-01T00:00:00Z"]);
    for (const [k, body, sum] of [["good", good, hex(good)], ["bad", bad, hex("x")]] as const) {
      await h.put(`int2/in/${k}.csv`, body);
      await h.put(`int2/in/${k}.csv.sha256`, sum);
    }
    const atomicity = { stagingFolder: "int2/in/", successFolder: "int2/ok/", failureFolder: "int2/bad/" };
    const skip = await run(await pipeline([source("", { atomicity, integrity: { sidecar: true, onMismatch: "skip" } }), target(s.name)]));
    assert.equal(skip.ok, true, JSON.stringify(skip));
    assert.deepEqual(skip.nodeResults[0].meta.skipped, ["int2/in/bad.csv"]);
    assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["s1"]);
    assert.deepEqual(await h.keys("int2/bad/"), ["int2/bad/bad.csv"]);

    await h.put("int3/w.csv", bad);
    await h.put("int3/w.csv.sha256", hex("x"));
    const warn = await run(await pipeline([source("int3/", { integrity: { sidecar: true, onMismatch: "warn" } }), target(s.name)]));
    assert.equal(warn.ok, true);
    assert.equal(warn.nodeResults[0].meta.warnings.length, 1);
    assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["s1", "s2"]);
  });

  test("manifests of <hash> <filename> lines, md5: a good one loads, a wrong or missing line fails", async () => {
    const s = await schema();
    const a = csv(["m1,a,1,1,2025-01-01T00:00:00Z"]);
    const b = csv(["m2,b,1,1,2025-01-01T00:00:00Z"]);
    await h.put("man/a.csv", a);
    await h.put("man/b.csv", b);
    await h.put("man/MANIFEST", `${hex(a, "md5")} a.csv\n${hex(b, "md5")} b.csv\n`);
    const id = await pipeline([source("man/", { integrity: { algorithm: "md5", manifest: "MANIFEST", onMismatch: "fail" } }), target(s.name)]);
    const ok = await run(id);
    assert.equal(ok.ok, true, JSON.stringify(ok));
    assert.deepEqual(ok.nodeResults[0].meta.verified, ["man/a.csv", "man/b.csv"]);
    await h.put("man/MANIFEST", `${hex(a, "md5")} a.csv\n`);
    const failed = await run(id);
    assert.equal(failed.ok, false);
    assert.match(failed.error, /b\.csv/);
  });

  test("an empty source aborts truncate and blue_green before anything is replaced; health gets a warning and an error, cleared by a good run", async () => {
    const s = await schema();
    await h.svc.sql(`INSERT INTO ${s.table} (customer_id) VALUES ('keep')`);
    for (const loadMode of ["truncate", "blue_green"]) {
      const id = await pipeline([source(`empty-${loadMode}/`), target(s.name, { loadMode, upsertKey: undefined })]);
      const res = await run(id);
      assert.equal(res.ok, false);
      assert.equal(res.failedNodeId, "load");
      assert.match(res.error, /empty source/);
      assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["keep"]);
      const alerts = (await h.call("GET", "/api/v1/system-health")).body.alerts.filter((a: { details: { pipelineId?: string } }) => a.details.pipelineId === id);
      assert.deepEqual(alerts.map((a: { severity: string }) => a.severity).sort(), ["error", "warning"]);
      if (loadMode === "truncate") {
        await h.put(`empty-${loadMode}/f.csv`, csv(["e1,a,1,1,2025-01-01T00:00:00Z"]));
        assert.equal((await run(id)).ok, true);
        const open = (await h.call("GET", "/api/v1/system-health")).body.alerts.filter((a: { details: { pipelineId?: string } }) => a.details.pipelineId === id);
        assert.deepEqual(open, []);
        await h.svc.sql(`DELETE FROM ${s.table}`);
        await h.svc.sql(`INSERT INTO ${s.table} (customer_id) VALUES ('keep')`);
      } else {
        // No later run of a deleted pipeline could clear its alerts: deleting it does.
        assert.equal((await h.call("DELETE", `/api/v1/pipelines/${id}`)).status, 204);
        const left = (await h.call("GET", "/api/v1/system-health")).body.alerts.filter((a: { details: { pipelineId?: string } }) => a.details.pipelineId === id);
        assert.deepEqual(left, []);
      }
    }
    // With failOnEmptySource false, truncate empties the table on purpose.
    const id = await pipeline([source("empty-allowed/"), target(s.name, { loadMode: "truncate", upsertKey: undefined, failOnEmptySource: false })]);
    assert.equal((await run(id)).ok, true);
    assert.deepEqual(await rows(s.table), []);
  });

  test("waitPolicy retries the listing, then onMissAction fail fails the source", async () => {
    const s = await schema();
    const started = Date.now();
    const res = await run(await pipeline([source("never/", { waitPolicy: { maxRetries: 2, intervalMinutes: 0.001, onMissAction: "fail" } }), target(s.name)]));
    assert.equal(res.ok, false);
    assert.equal(res.failedNodeId, "src");
    assert.match(res.error, /after 2 retries/);
    assert.ok(Date.now() - started >= 100);
  });
});

describe("validation, quarantine and error handling", () => {
  test("row rules with warn go to quarantine with reason and line; malformed rows too; the rest loads", async () => {
    const s = await schema();
    await h.put(
      "q/1.csv",
      ["customer_id,email,age,balance,updated_at", "q1,good@x.io,1,1,", "q2,not-an-email,1,1,", "q3,x@y.io,1", "q4,z@y.io,abc,1,", ",k@y.io,1,1,", "q6,w@y.io,2,2,"].join("\n"),
    );
    const id = await pipeline([
      source("q/"),
      {
        id: "check",
        kind: "validate",
        input: "src",
        rowLevel: [{ type: "regex", field: "email", pattern: "^[^@]+@[^@]+$", onFail: "warn" }],
        datasetLevel: { rowCount: { min: 1, max: 100, onFail: "abort" } },
        quarantine: { enabled: true, table: "rejects" },
      },
      { ...target(s.name), input: "check" },
    ]);
    const res = await run(id);
    assert.equal(res.ok, true, JSON.stringify(res));
    assert.deepEqual((await rows(s.table)).map((r) => r.customer_id), ["q1", "q6"]);
    const q = await h.svc.sql(`SELECT node_id, line_number::int AS line, reason FROM "${h.dataSchema(h.admin.tenantId)}".rejects WHERE pipeline_id = $1 ORDER BY line_number`, [id]);
    assert.deepEqual(q, [
      { node_id: "check", line: 3, reason: "email: does not match ^[^@]+@[^@]+$" },
      { node_id: "src", line: 4, reason: "expected 5 columns, got 3" },
      { node_id: "load", line: 5, reason: 'age: "abc" is not an integer' },
      { node_id: "load", line: 6, reason: "customer_id: is required" },
    ]);
    assert.equal(res.nodeResults.find((r: { id: string }) => r.id === "check").meta.quarantined, 4);
  });

  test("abort rules and rowCount bounds fail the run with nothing applied; without quarantine a bad row fails it naming the line", async () => {
    const s = await schema();
    await h.put("abort/1.csv", csv(["a1,a@x.io,1,1,", "a2,,1,1,"]));
    const abort = await run(
      await pipeline([source("abort/"), { id: "v", kind: "validate", input: "src", rowLevel: [{ type: "notNull", field: "email", onFail: "abort" }] }, { ...target(s.name), input: "v" }]),
    );
    assert.equal(abort.ok, false);
    assert.equal(abort.failedNodeId, "v");
    assert.match(abort.error, /line 3 .*email: is null/);
    const bounds = await run(await pipeline([source("abort/"), { id: "v", kind: "validate", input: "src", datasetLevel: { rowCount: { min: 5 } } }, { ...target(s.name), input: "v" }]));
    assert.equal(bounds.ok, false);
    assert.match(bounds.error, /rowCount 2/);
    await h.put("abort2/1.csv", csv(["b1,a,1,1,", "b2,a,xx,1,"]));
    const typed = await run(await pipeline([source("abort2/"), target(s.name)]));
    assert.equal(typed.ok, false);
    assert.equal(typed.failedNodeId, "load");
    assert.match(typed.error, /line 3 .*age/);
    assert.deepEqual(await rows(s.table), []);
  });

  test("a CSV that cannot be tokenized (an unclosed quote, after rows already read) fails the source with nothing applied; a quoted line break counts its lines", async () => {
    const s = await schema();
    const good = Array.from({ length: 2000 }, (_, i) => `q${i},"line one
line two",1,1,`);
    await h.put("unclosed/1.csv", csv([...good, 'q9999,"never closed,1,1,']));
    const res = await run(await pipeline([source("unclosed/"), target(s.name)]));
    assert.equal(res.ok, false, JSON.stringify(res));
    assert.equal(res.failedNodeId, "src");
    assert.match(res.error, /quote/i);
    assert.deepEqual(await rows(s.table), []);
    await h.put("multiline/1.csv", csv(["m1,\"a\nb\",1,1,", "m2,a,x,1,"]));
    const lines = await run(await pipeline([source("multiline/"), target(s.name)]));
    assert.match(lines.error, /line 4 .*age/, "the header, a record over two lines, then the bad one");
  });

  test("errorHandling: retries with backoff, then a dead-letter record", async () => {
    const s = await schema();
    const broken = (await h.call("POST", "/api/v1/connectors", h.connectorBody({ authConfig: { accessKeyId: h.s3.accessKeyId, secretAccessKey: "wrong" } }))).body;
    assert.equal(broken.status, "error");
    const res = await h.call("POST", "/api/v1/pipelines", {
      name: `dlq${++n}`,
      connectorId: broken.id,
      ir: { nodes: [source("dlq/"), target(s.name)], errorHandling: { retry: { maxAttempts: 3, backoff: "exponential", initialDelayMs: 20 }, dlq: { enabled: true } } },
    });
    const out = await run(res.body.id);
    assert.equal(out.ok, false);
    assert.equal(out.failedNodeId, "src");
    assert.match(out.error, /SignatureDoesNotMatch/);
    const [r] = (await h.call("GET", `/api/v1/pipelines/${res.body.id}/runs`)).body.data;
    assert.equal(r.attempts, 3);
    assert.equal(r.deadLettered, true);
    const dlq = await h.svc.sql("SELECT attempts, failed_node_id FROM ingestion_dead_letters WHERE tenant_id = $1 AND run_id = $2", [h.admin.tenantId, out.runId]);
    assert.deepEqual(dlq, [{ attempts: 3, failed_node_id: "src" }]);
  });

  test("tenants are apart: the other tenant's same-named table is untouched by this tenant's loads", async () => {
    const mine = await h.call("POST", "/api/v1/schemas", { name: "shared_name", fields: [{ name: "customer_id", dataType: "text", isPrimaryKey: true }] });
    const theirs = await h.call("POST", "/api/v1/schemas", { name: "shared_name", fields: [{ name: "customer_id", dataType: "text", isPrimaryKey: true }] }, h.other.apiKey);
    assert.equal(mine.body.tableName, theirs.body.tableName);
    await h.svc.sql(`INSERT INTO "${h.dataSchema(h.other.tenantId)}".ds_shared_name VALUES ('theirs')`);
    await h.put("iso/1.csv", "customer_id\nmine\n");
    const res = await run(await pipeline([source("iso/"), target("shared_name", { loadMode: "truncate", upsertKey: undefined })]));
    assert.equal(res.ok, true, JSON.stringify(res));
    assert.deepEqual(await h.svc.sql(`SELECT customer_id FROM "${h.dataSchema(h.admin.tenantId)}".ds_shared_name`), [{ customer_id: "mine" }]);
    assert.deepEqual(await h.svc.sql(`SELECT customer_id FROM "${h.dataSchema(h.other.tenantId)}".ds_shared_name`), [{ customer_id: "theirs" }]);
  });
});

describe("customer schemas and Recommend (docs/ingestion.md, Customer schemas)", () => {
  test("a loaded customer table feeds eligibility; a load invalidates the cached customer", async () => {
    const schemaRes = await h.call("POST", "/api/v1/schemas", {
      name: "profile",
      entityType: "customer",
      fields: [
        { name: "customer_id", dataType: "varchar", length: 64, isPrimaryKey: true },
        { name: "age", dataType: "integer" },
        { name: "tier", dataType: "text" },
      ],
    });
    assert.equal(schemaRes.status, 201);
    const offer = await h.call("POST", "/api/v1/offers", { name: "adults-gold", status: "active", eligibility: { all: [{ attribute: "customer.age", op: "gte", value: 18 }, { attribute: "customer.tier", op: "eq", value: "gold" }] } });
    assert.equal(offer.status, 201, JSON.stringify(offer.body));
    const key = (await h.call("POST", "/api/v1/api-keys", { name: "sdk" })).body.key;
    const recommend = async () => {
      const res = await h.call("POST", "/api/v1/recommend", { customerId: "cu-1" }, key);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body.offers.map((o: { offerId: string }) => o.offerId);
    };
    // Nothing known of cu-1 yet: the rules skip missing attributes (onMissing skip), and that answer is cached.
    assert.deepEqual(await recommend(), [offer.body.id]);
    const id = await pipeline([source("profile/", { ordering: "latest_by_mtime" }), target("profile")]);
    await h.put("profile/1.csv", "customer_id,age,tier\ncu-1,30,silver\ncu-2,12,gold\n");
    assert.equal((await run(id)).ok, true);
    assert.deepEqual(await recommend(), [], "the load reached Recommend: tier silver fails the rule");
    await new Promise((r) => setTimeout(r, 20));
    await h.put("profile/2.csv", "customer_id,age,tier\ncu-1,30,gold\n");
    assert.equal((await run(id)).ok, true);
    assert.deepEqual(await recommend(), [offer.body.id]);
    // Attributes stored through the customers API win over loaded ones.
    const put = await h.call("PUT", "/api/v1/customers/cu-1", { attributes: { tier: "bronze" } });
    assert.ok(put.status === 200 || put.status === 201, JSON.stringify(put.body));
    assert.deepEqual(await recommend(), []);
  });
});

describe("scheduled pipelines (docs/ingestion.md, Schedules)", () => {
  /** A pipeline on `schedule` that loads the CSV files under `path` into the schema; its id. */
  const scheduled = async (schedule: string, path: string, schemaName: string, sourceConfig: Record<string, unknown> = {}) => {
    const res = await h.call("POST", "/api/v1/pipelines", { name: `sched${++n}`, connectorId, schedule, ir: { nodes: [source(path, sourceConfig), target(schemaName)] } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.schedule ?? "", schedule);
    return res.body.id as string;
  };

  test("with SCHEDULER=off an external cron runs them: the tick route runs the minute job", async () => {
    const s = await schema();
    await h.put("cron/1.csv", csv(["c1,a,1,1,2025-01-01T00:00:00Z"]));
    const id = await scheduled("* * * * *", "cron/", s.name);
    const tick = await rest(h.svc.baseUrl, "POST", "/api/cron/tick", { bearer: CRON_SECRET });
    assert.equal(tick.status, 200, JSON.stringify(tick.body));
    const jobs = tick.body.runs.map((r: { job: string }) => r.job);
    assert.ok(jobs.includes("ingestion-pipelines") && jobs.includes("scheduled-runs-retention"), jobs.join(", "));
    const runs = (await h.call("GET", `/api/v1/pipelines/${id}/runs`)).body.data;
    assert.deepEqual(runs.map((r: { trigger: string; ok: boolean }) => [r.trigger, r.ok]), [["schedule", true]]);
  });

  test("the minute job runs each due pipeline once per slot, through its own scheduled_runs claim", async () => {
    const s = await schema();
    await h.put("sched/1.csv", csv(["x1,a,1,1,2025-01-01T00:00:00Z"]));
    const make = (schedule: string) => scheduled(schedule, "sched/", s.name);
    const due = await make("*/5 * * * *");
    const notDue = await make("0 3 * * *");
    const job = h.svc.running.services.jobs.find((j) => j.name === "ingestion-pipelines")!;
    const slot = new Date("2030-01-01T10:05:00Z");
    await Promise.all([job.run(slot), job.run(slot)]);
    await job.run(slot);
    const runsOf = async (id: string) => (await h.call("GET", `/api/v1/pipelines/${id}/runs`)).body.data;
    const runs = await runsOf(due);
    assert.equal(runs.length, 1, "once per slot, whoever fires it");
    assert.equal(runs[0].trigger, "schedule");
    assert.equal(runs[0].ok, true);
    assert.deepEqual(await runsOf(notDue), []);
    await job.run(new Date("2030-01-01T10:06:00Z"));
    assert.equal((await runsOf(due)).length, 1, "10:06 is not a slot of */5");
    await job.run(new Date("2030-01-01T10:10:00Z"));
    assert.equal((await runsOf(due)).length, 2);
  });

  test("the minute job runs again the newest slot a stop interrupted or whose process died, from the last day, while the pipeline is scheduled, three tries in all", async () => {
    const s = await schema();
    await h.put("resume/1.csv", csv(["r1,a,1,1,2025-01-01T00:00:00Z"]));
    const make = (schedule: string) => scheduled(schedule, "resume/", s.name);
    // Daily at 03:00: none is due in the minute the job runs for.
    const daily = "0 3 * * *";
    const slot = new Date("2031-01-01T10:00:00Z");
    const hoursBefore = (hours: number) => new Date(slot.getTime() - hours * 3_600_000);
    const STOPPED = "stopped: the service shut down";
    const slots: Array<[id: string, at: Date, status: string, attempts: number, error: string | null, leaseMinutes: number]> = [];
    const stopped = await make(daily);
    slots.push([stopped, hoursBefore(7), "failed", 1, STOPPED, -1]);
    const died = await make(daily);
    slots.push([died, hoursBefore(1), "running", 1, null, -1]);
    const stillRunning = await make(daily);
    slots.push([stillRunning, hoursBefore(1), "running", 1, null, 5]);
    const failedOtherwise = await make(daily);
    slots.push([failedOtherwise, hoursBefore(1), "failed", 1, "the file was bad", -1]);
    const newerSlotSince = await make(daily);
    slots.push([newerSlotSince, hoursBefore(7), "failed", 1, STOPPED, -1], [newerSlotSince, hoursBefore(6), "succeeded", 1, null, -1]);
    const tooOld = await make(daily);
    slots.push([tooOld, hoursBefore(25), "failed", 1, STOPPED, -1]);
    const outOfTries = await make(daily);
    slots.push([outOfTries, hoursBefore(1), "failed", 3, STOPPED, -1]);
    const unscheduled = await make("");
    slots.push([unscheduled, hoursBefore(1), "failed", 1, STOPPED, -1]);
    // Hourly, so due at 10:00 too: that slot runs, and the 09:00 one it supersedes does not.
    const dueNow = await make("0 * * * *");
    slots.push([dueNow, hoursBefore(1), "failed", 1, STOPPED, -1]);
    const name = (id: string) => `ingestion-pipeline:${h.admin.tenantId}:${id}`;
    for (const [id, at, status, attempts, error, leaseMinutes] of slots) {
      await h.svc.sql(
        `INSERT INTO scheduled_runs (job_name, slot, status, attempts, error, started_at, finished_at, lease_until)
         VALUES ($1, $2, $3, $4, $5, now(), CASE WHEN $3 = 'running' THEN NULL ELSE now() END, now() + $6 * interval '1 minute')`,
        [name(id), at, status, attempts, error, leaseMinutes],
      );
    }
    const job = h.svc.running.services.jobs.find((j) => j.name === "ingestion-pipelines")!;
    await Promise.all([job.run(slot), job.run(slot)]);
    await job.run(slot);
    const runsOf = async (id: string) => (await h.call("GET", `/api/v1/pipelines/${id}/runs`)).body.data as Array<{ trigger: string; ok: boolean }>;
    for (const id of [stopped, died]) assert.deepEqual((await runsOf(id)).map((r) => [r.trigger, r.ok]), [["schedule", true]], "run again once, whoever fires the minute");
    for (const id of [stillRunning, failedOtherwise, newerSlotSince, tooOld, outOfTries, unscheduled]) assert.deepEqual(await runsOf(id), []);
    assert.equal((await runsOf(dueNow)).length, 1, "the due slot alone");
    const state = async (id: string, at: Date) => (await h.svc.sql(`SELECT status, attempts, error FROM scheduled_runs WHERE job_name = $1 AND slot = $2`, [name(id), at]))[0];
    assert.deepEqual(await state(stopped, hoursBefore(7)), { status: "succeeded", attempts: 2, error: null });
    assert.deepEqual(await state(died, hoursBefore(1)), { status: "succeeded", attempts: 2, error: null });
    assert.deepEqual(await state(dueNow, slot), { status: "succeeded", attempts: 1, error: null });
    assert.deepEqual(await state(dueNow, hoursBefore(1)), { status: "failed", attempts: 1, error: STOPPED });
    assert.deepEqual(await rows(s.table), [{ customer_id: "r1", email: "a", age: 1, balance: "1.00" }]);
  });

  test("a scheduled run that a stop interrupts leaves its slot to be run again, and one the stop refused to start too", async () => {
    const s = await schema();
    // Waits for a file that never comes, far longer than the test.
    const id = await scheduled("*/5 * * * *", "never/", s.name, { waitPolicy: { maxRetries: 10, intervalMinutes: 0.05, onMissAction: "fail" } });
    // A second process on the same database, to stop.
    const { settingsKeys, outbound, ingestionStsEndpoint, redisKeyPrefix, databaseUrl } = h.svc.config;
    const svc = await startTestService({ settingsKeys, outbound, ingestionStsEndpoint, redisKeyPrefix }, databaseUrl!);
    try {
      const job = svc.running.services.jobs.find((j) => j.name === "ingestion-pipelines")!;
      const slot = new Date("2032-01-01T10:05:00Z");
      const running = job.run(slot);
      for (let i = 0; !(await h.svc.sql("SELECT 1 FROM ingestion_runs WHERE pipeline_id = $1", [id])).length; i++) {
        assert.ok(i < 500, "the scheduled run started");
        await new Promise((r) => setTimeout(r, 10));
      }
      // The stop's first step, before the scheduler and the pools: runs in flight are interrupted.
      await svc.running.services.interrupt(2000);
      await running;
      const slotOf = async (at: Date) =>
        (await h.svc.sql(`SELECT status, error, attempts FROM scheduled_runs WHERE job_name = $1 AND slot = $2`, [`ingestion-pipeline:${h.admin.tenantId}:${id}`, at]))[0];
      assert.deepEqual(await slotOf(slot), { status: "failed", error: "stopped: the service shut down", attempts: 1 });
      // A minute that fires while the service stops (not due: 10:07): the 10:05 slot is claimed to
      // run again, refused, and its attempt given back.
      await job.run(new Date("2032-01-01T10:07:00Z"));
      assert.deepEqual(await slotOf(slot), { status: "failed", error: "stopped: the service shut down", attempts: 1 });
      // A due minute: refused too, and its slot stays to be run again with no attempt used.
      const next = new Date("2032-01-01T10:10:00Z");
      await job.run(next);
      assert.deepEqual(await slotOf(next), { status: "failed", error: "stopped: the service shut down", attempts: 0 });
      assert.equal((await h.svc.sql("SELECT count(*)::int AS n FROM ingestion_runs WHERE pipeline_id = $1", [id]))[0].n, 1, "the refused one never started");
    } finally {
      await svc.stop();
    }
  });
});

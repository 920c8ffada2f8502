import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { startIngestionHarness, type IngestionHarness } from "../support/ingestion-harness.js";
import { forbiddenAddresses } from "../../src/notifications/outbound-guard.js";
import { openObjectStore } from "../../src/ingestion/object-store.js";

let h: IngestionHarness;
let svc: IngestionHarness["svc"];
let s3: IngestionHarness["s3"];
let sts: IngestionHarness["sts"];
let admin: IngestionHarness["admin"];
let other: IngestionHarness["other"];
let viewer: { userId: string; apiKey: string };

const call = (method: string, path: string, body?: unknown, key?: string) => h.call(method, path, body, key);
const s3Connector = (fields: Record<string, unknown> = {}) => {
  const body = h.connectorBody(fields);
  if (!fields.config) (body.config as Record<string, unknown>).prefix = "incoming/";
  return body;
};

before(async () => {
  h = await startIngestionHarness();
  ({ svc, s3, sts, admin, other } = h);
  viewer = await svc.createUser(admin.tenantId, "viewer");
});
after(() => h.close());

describe("connectors (spec 2.21, 4.20)", () => {
  test("access_keys: created active after listing the bucket; secrets are encrypted at rest and never returned", async () => {
    const res = await call("POST", "/api/v1/connectors", s3Connector({ name: "primary" }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.status, "active");
    assert.equal(res.body.lastError, null);
    assert.equal(res.body.authConfig.accessKeyId, s3.accessKeyId);
    assert.equal(res.body.authConfig.secretAccessKey, undefined);
    assert.deepEqual(res.body.secretsSet, ["secretAccessKey"]);
    assert.ok(!JSON.stringify(res.body).includes(s3.secretAccessKey));
    const [row] = await svc.sql("SELECT secrets, auth_config::text AS auth FROM ingestion_connectors WHERE tenant_id = $1 AND id = $2", [admin.tenantId, res.body.id]);
    assert.ok(row.secrets && !row.secrets.includes(s3.secretAccessKey) && !row.auth.includes(s3.secretAccessKey));
    const read = await call("GET", `/api/v1/connectors/${res.body.id}`, undefined, viewer.apiKey);
    assert.equal(read.status, 200);
    assert.ok(!JSON.stringify(read.body).includes(s3.secretAccessKey));
    const audit = await call("GET", "/api/v1/audit-logs?entityType=connector&limit=5");
    assert.ok(!JSON.stringify(audit.body).includes(s3.secretAccessKey));
  });

  test("a wrong secret is refused by the store: status error with lastError; test re-checks after a fix", async () => {
    const res = await call("POST", "/api/v1/connectors", s3Connector({ authConfig: { accessKeyId: s3.accessKeyId, secretAccessKey: "wrong-secret" } }));
    assert.equal(res.status, 201);
    assert.equal(res.body.status, "error");
    assert.match(res.body.lastError, /SignatureDoesNotMatch/);
    const fixed = await call("PUT", `/api/v1/connectors/${res.body.id}`, s3Connector({ name: res.body.name }));
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
    assert.equal(fixed.body.status, "active");
    // PUT without the secret keeps the stored one.
    const kept = await call("PUT", `/api/v1/connectors/${res.body.id}`, s3Connector({ name: res.body.name, description: "kept", authConfig: { accessKeyId: s3.accessKeyId } }));
    assert.equal(kept.body.status, "active");
    const tested = await call("POST", "/api/v1/connectors/test", { id: res.body.id });
    assert.equal(tested.status, 200);
    assert.equal(tested.body.status, "active");
    assert.ok(tested.body.lastTestedAt);
  });

  test("a bucket that does not exist: status error naming it", async () => {
    const res = await call("POST", "/api/v1/connectors", s3Connector({ config: { bucket: "missing-bucket", endpoint: s3.endpoint, forcePathStyle: true } }));
    assert.equal(res.body.status, "error");
    assert.match(res.body.lastError, /NoSuchBucket/);
  });

  test("iam_role assumes the role with its external id through STS, then lists", async () => {
    const ok = await call("POST", "/api/v1/connectors", s3Connector({ authMethod: "iam_role", authConfig: { roleArn: sts.roleArn, externalId: sts.externalId } }));
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.status, "active", ok.body.lastError);
    assert.equal(ok.body.authConfig.roleArn, sts.roleArn);
    assert.equal(ok.body.authConfig.externalId, undefined);
    assert.deepEqual(ok.body.secretsSet, ["externalId"]);
    assert.ok(sts.calls.some((c) => c.granted && c.externalId === sts.externalId));
    const wrong = await call("POST", "/api/v1/connectors", s3Connector({ authMethod: "iam_role", authConfig: { roleArn: sts.roleArn, externalId: "not-the-id" } }));
    assert.equal(wrong.body.status, "error");
    assert.match(wrong.body.lastError, /AccessDenied/);
  });

  test("bad bodies are 400 naming the field; another tenant's connector is 404", async () => {
    const bad = await call("POST", "/api/v1/connectors", { name: "", type: "ftp", config: { bucket: "A" }, authMethod: "password" });
    assert.equal(bad.status, 400);
    const text = JSON.stringify(bad.body);
    for (const f of ["name", "type", "config.bucket", "authMethod"]) assert.ok(text.includes(f), `${f} in ${text}`);
    const mine = await call("POST", "/api/v1/connectors", s3Connector());
    assert.equal((await call("GET", `/api/v1/connectors/${mine.body.id}`, undefined, other.apiKey)).status, 404);
    assert.equal((await call("POST", "/api/v1/connectors/test", { id: mine.body.id }, other.apiKey)).status, 404);
    const noId = await call("POST", "/api/v1/connectors/test", {});
    assert.equal(noId.status, 400, "spec 4.20: body {id}; a missing one is a missing field");
    assert.match(noId.body.detail, /^id: is required/);
    assert.equal((await call("DELETE", `/api/v1/connectors/${mine.body.id}`, undefined, other.apiKey)).status, 404);
    assert.equal((await call("POST", "/api/v1/connectors", s3Connector(), viewer.apiKey)).status, 403);
  });

  test("the outbound rule: loopback endpoints are refused unless OUTBOUND_ALLOW_PRIVATE", async () => {
    const access = { bucket: "feeds", region: "us-east-1", prefix: "", endpoint: s3.endpoint, forcePathStyle: true, authMethod: "access_keys" as const, roleArn: null, externalId: null, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey };
    await assert.rejects(openObjectStore(access, { forbidden: forbiddenAddresses(false), stsEndpoint: null, timeoutMs: 1000 }), /private, loopback/);
    const named = { ...access, endpoint: s3.endpoint.replace("127.0.0.1", "localhost") };
    const store = await openObjectStore(named, { forbidden: forbiddenAddresses(false), stsEndpoint: null, timeoutMs: 1000 });
    await assert.rejects(store.list(""), /private, loopback/);
    store.close();
  });
});

const customerFields = [
  { name: "customer_id", dataType: "varchar", length: 64, isPrimaryKey: true },
  { name: "email", dataType: "text", isUnique: true },
  { name: "age", dataType: "integer" },
  { name: "balance", dataType: "numeric", precision: 12, scale: 2 },
  { name: "vip", dataType: "boolean" },
  { name: "joined", dataType: "date" },
  { name: "seen_at", dataType: "timestamp" },
  { name: "extra", dataType: "jsonb" },
  { name: "visits", dataType: "bigint", isNullable: false },
];

describe("schemas (spec 2.21, 4.20)", () => {
  test("a primary-key field may be named id: the table has no automatic id column then, and that field is its key", async () => {
    const res = await call("POST", "/api/v1/schemas", { name: "accounts_by_id", fields: [{ name: "id", dataType: "integer", isPrimaryKey: true }, { name: "v", dataType: "varchar" }] });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const schema = `ingest_${admin.tenantId.replace(/-/g, "")}`;
    const cols = await svc.sql("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'ds_accounts_by_id' ORDER BY ordinal_position", [schema]);
    assert.deepEqual(cols.map((c: { column_name: string; data_type: string }) => [c.column_name, c.data_type]), [["id", "integer"], ["v", "character varying"]]);
    const unkeyed = await call("POST", "/api/v1/schemas", { name: "loose", fields: [{ name: "id", dataType: "integer" }] });
    assert.equal(unkeyed.status, 400);
    assert.equal(unkeyed.body.errors[0].field, "fields[0].name");
  });

  test("create makes a real table ds_<name> in the tenant's own schema, with the declared types and flags", async () => {
    const res = await call("POST", "/api/v1/schemas", { name: "customers", displayName: "Customers", entityType: "customer", fields: customerFields });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.tableName, "ds_customers");
    assert.equal(res.body.fields.length, customerFields.length);
    const schema = `ingest_${admin.tenantId.replace(/-/g, "")}`;
    const cols = await svc.sql(
      "SELECT column_name, data_type, is_nullable, character_maximum_length, numeric_precision, numeric_scale FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'ds_customers' ORDER BY ordinal_position",
      [schema],
    );
    assert.deepEqual(cols.map((c) => c.column_name), customerFields.map((f) => f.name), "no id column with a primary key");
    assert.equal(cols[0].character_maximum_length, 64);
    assert.equal(cols[3].numeric_precision, 12);
    assert.equal(cols[3].numeric_scale, 2);
    assert.equal(cols.find((c) => c.column_name === "visits").is_nullable, "NO");
    assert.equal(cols.find((c) => c.column_name === "seen_at").data_type, "timestamp with time zone");
    const [pk] = await svc.sql(
      `SELECT string_agg(a.attname, ',') AS cols FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
       WHERE i.indrelid = $1::regclass AND i.indisprimary`,
      [`"${schema}"."ds_customers"`],
    );
    assert.equal(pk.cols, "customer_id");
    const uniques = await svc.sql("SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND tablename = 'ds_customers' AND indexdef LIKE '%UNIQUE%(email)%'", [schema]);
    assert.equal(uniques.length, 1);
  });

  test("without a primary key the table gets an id identity column", async () => {
    const res = await call("POST", "/api/v1/schemas", { name: "events_raw", entityType: "custom", fields: [{ name: "kind", dataType: "text" }] });
    assert.equal(res.status, 201);
    const cols = await svc.sql("SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'ds_events_raw' ORDER BY ordinal_position", [
      `ingest_${admin.tenantId.replace(/-/g, "")}`,
    ]);
    assert.deepEqual(cols.map((c) => c.column_name), ["id", "kind"]);
  });

  test("bad names and types are 400 naming the field; nothing is created", async () => {
    for (const [body, field] of [
      [{ name: 'x"; DROP TABLE tenants; --', fields: [{ name: "a", dataType: "text" }] }, "name"],
      [{ name: "ok_name", fields: [{ name: "bad name", dataType: "text" }] }, "fields[0].name"],
      [{ name: "ok_name", fields: [{ name: "a", dataType: "money" }] }, "fields[0].dataType"],
      [{ name: "ok_name", fields: [{ name: "a", dataType: "numeric", precision: 5, scale: 9 }] }, "fields[0].scale"],
      [{ name: "ok_name", fields: [{ name: "a", dataType: "varchar", length: 0 }] }, "fields[0].length"],
      [{ name: "ok_name", fields: [{ name: "a", dataType: "text" }, { name: "A", dataType: "text" }] }, "fields[1].name"],
      [{ name: "ok_name", entityType: "person", fields: [{ name: "a", dataType: "text" }] }, "entityType"],
      [{ name: "ok_name", fields: [] }, "fields"],
    ] as const) {
      const res = await call("POST", "/api/v1/schemas", body);
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.ok(JSON.stringify(res.body).includes(`${field}:`), `${field} in ${JSON.stringify(res.body)}`);
    }
    assert.equal((await svc.sql("SELECT 1 FROM ingestion_schemas WHERE name = 'ok_name'")).length, 0);
    const dup = await call("POST", "/api/v1/schemas", { name: "Customers", fields: [{ name: "a", dataType: "text" }] });
    assert.equal(dup.status, 409, "a name that folds to an existing table");
  });

  test("two tenants may both have ds_customers: two tables in two schemas", async () => {
    const res = await call("POST", "/api/v1/schemas", { name: "customers", entityType: "customer", fields: [{ name: "id2", dataType: "text" }] }, other.apiKey);
    assert.equal(res.status, 201);
    assert.equal(res.body.tableName, "ds_customers");
    const tables = await svc.sql("SELECT table_schema FROM information_schema.tables WHERE table_name = 'ds_customers' AND table_schema IN ($1, $2)", [
      `ingest_${admin.tenantId.replace(/-/g, "")}`,
      `ingest_${other.tenantId.replace(/-/g, "")}`,
    ]);
    assert.equal(tables.length, 2);
    assert.equal((await call("GET", `/api/v1/schemas/${res.body.id}`)).status, 404);
  });
});

describe("pipelines and IR versions (spec 2.21, 4.20, 9)", () => {
  let connectorId: string;
  let schemaId: string;
  const ir = (target: Record<string, unknown> = {}) => ({
    kind: "pipeline",
    version: "1.0",
    id: "p1",
    metadata: { name: "load", owner: "data" },
    nodes: [
      { id: "src", kind: "source", config: { path: "customers/", format: "csv", pattern: { type: "glob", value: "*.csv" } } },
      { id: "fix", kind: "transform", input: "src", ops: [{ type: "expression", outputField: "age", formula: "coalesce(to_number(age), 0) + 1" }] },
      { id: "chk", kind: "validate", input: "fix", rowLevel: [{ type: "regex", field: "email", pattern: "^[^@]+@[^@]+$", onFail: "warn" }] },
      { id: "out", kind: "target", input: "chk", schema: "customers", loadMode: "upsert", upsertKey: ["customer_id"], ...target },
    ],
  });

  before(async () => {
    connectorId = (await call("POST", "/api/v1/connectors", s3Connector())).body.id;
    schemaId = (await call("GET", "/api/v1/schemas")).body.data.find((s: { name: string }) => s.name === "customers").id;
  });

  test("create answers id, irVersion and status draft; GET .../ir returns the envelope", async () => {
    const res = await call("POST", "/api/v1/pipelines", { name: "customers-daily", connectorId, schemaId, irVersion: "1.0", ir: ir() });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.equal(res.body.status, "draft");
    assert.equal(res.body.irVersion, "1.0");
    assert.equal(res.body.currentVersion, 1);
    const env = await call("GET", `/api/v1/pipelines/${res.body.id}/ir`);
    assert.equal(env.status, 200);
    assert.equal(env.body.version, 1);
    assert.equal(env.body.ir.nodes.length, 4);
    assert.equal((await call("GET", `/api/v1/pipelines/${res.body.id}`, undefined, other.apiKey)).status, 404);
    // The schema is in use now.
    assert.equal((await call("DELETE", `/api/v1/schemas/${schemaId}`)).status, 409);
    assert.equal((await call("DELETE", `/api/v1/connectors/${connectorId}`)).status, 409);
    // A connector named only by a source node (by name) is in use too.
    const named = (await call("POST", "/api/v1/connectors", s3Connector({ name: "by-name" }))).body;
    const nodes = ir().nodes;
    const viaIr = await call("POST", "/api/v1/pipelines", { name: "via-ir", ir: { ...ir(), nodes: [{ ...nodes[0], connector: "by-name" }, ...nodes.slice(1)] } });
    assert.equal(viaIr.status, 201, JSON.stringify(viaIr.body));
    assert.equal((await call("DELETE", `/api/v1/connectors/${named.id}`)).status, 409);
    assert.equal((await call("DELETE", `/api/v1/pipelines/${viaIr.body.id}`)).status, 204);
    assert.equal((await call("DELETE", `/api/v1/connectors/${named.id}`)).status, 204);
  });

  test("the pipeline resource carries its current IR (spec 2.21): on create, GET and the list; null before the first", async () => {
    const created = await call("POST", "/api/v1/pipelines", { name: "with-ir", connectorId, ir: ir() });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const env = (await call("GET", `/api/v1/pipelines/${created.body.id}/ir`)).body;
    assert.deepEqual(created.body.ir, env.ir, "create answers the IR GET .../ir returns");
    assert.deepEqual(created.body.ir, ir(), "as it was posted");
    assert.deepEqual((await call("GET", `/api/v1/pipelines/${created.body.id}`)).body.ir, env.ir);

    const bare = await call("POST", "/api/v1/pipelines", { name: "without-ir", connectorId });
    assert.equal(bare.status, 201, JSON.stringify(bare.body));
    assert.ok("ir" in bare.body && bare.body.ir === null, `ir is null before the first version: ${JSON.stringify(bare.body)}`);
    assert.equal((await call("GET", `/api/v1/pipelines/${bare.body.id}`)).body.ir, null);

    // A new version becomes the resource's IR.
    const next = ir({ loadMode: "truncate" });
    assert.equal((await call("POST", `/api/v1/pipelines/${created.body.id}/ir`, { ir: next, comment: "truncate" })).status, 201);
    assert.deepEqual((await call("GET", `/api/v1/pipelines/${created.body.id}`)).body.ir, next);

    // The list carries each row's current IR too, from its one query.
    const list = (await call("GET", "/api/v1/pipelines?limit=100")).body.data as Array<{ id: string; ir: unknown }>;
    assert.deepEqual(list.find((p) => p.id === created.body.id)?.ir, next);
    assert.equal(list.find((p) => p.id === bare.body.id)?.ir, null);
    for (const id of [created.body.id, bare.body.id]) assert.equal((await call("DELETE", `/api/v1/pipelines/${id}`)).status, 204);
  });

  test("two concurrent IR posts make two versions, none lost", async () => {
    const p = (await call("POST", "/api/v1/pipelines", { name: "concurrent", connectorId })).body;
    assert.equal(p.currentVersion, 0);
    assert.equal((await call("GET", `/api/v1/pipelines/${p.id}/ir`)).status, 404);
    const posts = await Promise.all(Array.from({ length: 4 }, (_, i) => call("POST", `/api/v1/pipelines/${p.id}/ir`, { ir: ir(), comment: `edit ${i}` })));
    for (const r of posts) assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual(posts.map((r) => r.body.version).sort(), [1, 2, 3, 4]);
    const rows = await svc.sql("SELECT version, comment FROM ingestion_pipeline_ir WHERE tenant_id = $1 AND pipeline_id = $2 ORDER BY version", [admin.tenantId, p.id]);
    assert.equal(rows.length, 4);
    assert.equal((await call("GET", `/api/v1/pipelines/${p.id}`)).body.currentVersion, 4);
  });

  test("IR validation names the node and the field", async () => {
    const p = (await call("POST", "/api/v1/pipelines", { name: "validation", connectorId })).body;
    const post = (body: unknown) => call("POST", `/api/v1/pipelines/${p.id}/ir`, { ir: body });
    const nodes = ir().nodes;
    const cases: Array<[unknown, string]> = [
      [{ ...ir(), nodes: [...nodes, { id: "x", kind: "explode", input: "src" }] }, "ir.nodes[4](x).kind"],
      [{ ...ir(), nodes: [nodes[0], { ...nodes[1], input: "nowhere" }, nodes[2], nodes[3]] }, "ir.nodes[1](fix).input"],
      [{ ...ir(), nodes: [nodes[0], { ...nodes[1], input: "chk" }, nodes[2], nodes[3]] }, "cycle"],
      [{ ...ir(), nodes: [nodes[0], { ...nodes[0], id: "src2" }, nodes[3]] }, "exactly one source"],
      [{ ...ir(), nodes: [nodes[0], nodes[1]] }, "at least one target"],
      [ir({ schema: "nope" }), "ir.nodes[3](out).schema"],
      [ir({ upsertKey: ["missing"] }), "ir.nodes[3](out).upsertKey"],
      [ir({ upsertKey: undefined }), "ir.nodes[3](out).upsertKey"],
      [ir({ loadMode: "incremental_watermark", watermarkColumn: undefined }), "ir.nodes[3](out).watermarkColumn"],
      [ir({ loadMode: "merge" }), "ir.nodes[3](out).loadMode"],
      [{ ...ir(), nodes: [nodes[0], nodes[1], { ...nodes[2], rowLevel: [{ type: "regex", field: "email", pattern: "([a-z", onFail: "warn" }] }, nodes[3]] }, "ir.nodes[2](chk).rowLevel[0].pattern"],
      [{ ...ir(), nodes: [nodes[0], { ...nodes[1], ops: [{ type: "expression", outputField: "x", formula: "1 + * 2" }] }, nodes[2], nodes[3]] }, "ir.nodes[1](fix).ops[0].formula"],
      [{ ...ir(), nodes: [{ ...nodes[0], config: { pattern: { type: "regex", value: "(" } } }, nodes[1], nodes[2], nodes[3]] }, "ir.nodes[0](src).config.pattern.value"],
    ];
    for (const [body, field] of cases) {
      const res = await post(body);
      assert.equal(res.status, 400, `${field}: ${JSON.stringify(res.body)}`);
      assert.ok(JSON.stringify(res.body).includes(field), `${field} in ${JSON.stringify(res.body)}`);
    }
    // Another tenant's schema is not a target of this tenant's pipeline.
    const foreign = (await call("GET", "/api/v1/schemas", undefined, other.apiKey)).body.data[0];
    const res = await post(ir({ schema: foreign.id }));
    assert.equal(res.status, 400);
    assert.match(JSON.stringify(res.body), /ir\.nodes\[3\]\(out\)\.schema/);
    assert.equal((await call("GET", `/api/v1/pipelines/${p.id}`)).body.currentVersion, 0, "nothing stored");
  });

  test("a pipeline naming another tenant's connector or schema is 400; bad cron is refused", async () => {
    const foreignSchema = (await call("GET", "/api/v1/schemas", undefined, other.apiKey)).body.data[0].id;
    const res = await call("POST", "/api/v1/pipelines", { name: "foreign", schemaId: foreignSchema });
    assert.equal(res.status, 400);
    assert.match(JSON.stringify(res.body), /schemaId/);
    const cron = await call("POST", "/api/v1/pipelines", { name: "cron", connectorId, schedule: "61 * * * *" });
    assert.equal(cron.status, 422);
    assert.equal(cron.headers.get("x-error-reason"), "INVALID_CRON_EXPRESSION");
    assert.deepEqual(cron.body.errors.map((e: { field: string }) => e.field), ["schedule"]);
    const seconds = await call("POST", "/api/v1/pipelines", { name: "seconds", connectorId, schedule: "0 */5 * * * *" });
    assert.equal(seconds.status, 201, "six fields: a leading seconds field");
  });
});

describe("export and import (spec 2.21, 4.13)", () => {
  test("connectors travel without authConfig and secrets and come in with credentials cleared; schemas bring their tables; pipelines their IR versions", async () => {
    await call("POST", "/api/v1/connectors", s3Connector({ name: "exported", authMethod: "iam_role", authConfig: { roleArn: sts.roleArn, externalId: sts.externalId } }));
    const file = await call("GET", "/api/v1/export/full");
    assert.equal(file.status, 200);
    const exported = file.body.entities.connectors.find((c: { name: string }) => c.name === "exported");
    assert.ok(exported);
    for (const column of ["secrets", "secretsKeyId", "authConfig"]) assert.equal(column in exported, false, column);
    const text = JSON.stringify(file.body);
    assert.ok(!text.includes(sts.externalId) && !text.includes(s3.secretAccessKey));
    assert.ok(file.body.entities.schemas.some((s: { name: string }) => s.name === "customers"));
    const pipeline = file.body.entities.pipelines.find((p: { name: string }) => p.name === "customers-daily");
    assert.ok(pipeline);

    const fresh = await svc.createTenant("import-target");
    const imported = await call("POST", "/api/v1/import", file.body, fresh.apiKey);
    assert.equal(imported.status, 201, JSON.stringify(imported.body));
    const newId = (kind: string, sourceId: string) => imported.body.entities.find((e: { kind: string; sourceId: string }) => e.kind === kind && e.sourceId === sourceId).id;
    const read = await call("GET", `/api/v1/connectors/${newId("connectors", exported.id)}`, undefined, fresh.apiKey);
    assert.equal(read.status, 200);
    assert.equal(read.body.status, "error");
    assert.match(read.body.lastError, /imported without credentials/);
    assert.deepEqual(read.body.authConfig, {});
    assert.deepEqual(read.body.secretsSet, []);
    assert.equal(read.body.config.bucket, "feeds");

    // A schema's name is its key: suffixed like keys, within identifier rules; its display name gets " (imported)".
    const source = file.body.entities.schemas.find((s: { name: string }) => s.name === "customers");
    const schema = imported.body.entities.find((e: { kind: string; sourceId: string }) => e.kind === "schemas" && e.sourceId === source.id);
    assert.match(schema.key, /^customers_imported_[0-9a-f]{6}$/);
    assert.equal(schema.name, `${source.displayName} (imported)`);
    const tables = await svc.sql("SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = $1", [h.dataSchema(fresh.tenantId)]);
    assert.ok(tables.some((t) => t.name === `ds_${schema.key}`), "the imported schema's table exists");
    const p = await call("GET", `/api/v1/pipelines/${newId("pipelines", pipeline.id)}`, undefined, fresh.apiKey);
    assert.equal(p.body.status, "draft");
    assert.equal(p.body.connectorId, newId("connectors", pipeline.connectorId));
    const ir = await call("GET", `/api/v1/pipelines/${p.body.id}/ir`, undefined, fresh.apiKey);
    assert.equal(ir.status, 200);
    assert.equal(ir.body.ir.nodes.length, 4);
    assert.equal(ir.body.ir.nodes[3].schema, schema.key, "the target named the schema by name: it names the imported one");
    // The schema is in use in the new tenant too.
    assert.equal((await call("DELETE", `/api/v1/schemas/${p.body.schemaId}`, undefined, fresh.apiKey)).status, 409);
  });

  test("an export imports back into its own tenant: schemas are renamed, and the pipelines target the imported ones", async () => {
    const file = await call("GET", "/api/v1/export/full");
    assert.equal(file.status, 200);
    assert.ok(file.body.entities.schemas.length > 0);
    const imported = await call("POST", "/api/v1/import", file.body);
    assert.equal(imported.status, 201, JSON.stringify(imported.body));
    const schemas = imported.body.entities.filter((e: { kind: string }) => e.kind === "schemas");
    assert.equal(schemas.length, file.body.entities.schemas.length);
    const source = file.body.entities.schemas.find((s: { name: string }) => s.name === "customers");
    const copy = schemas.find((e: { sourceId: string }) => e.sourceId === source.id);
    const read = await call("GET", `/api/v1/schemas/${copy.id}`);
    assert.equal(read.status, 200);
    assert.match(read.body.name, /^customers_imported_[0-9a-f]{6}$/);
    assert.equal(read.body.tableName, `ds_${read.body.name}`);
    assert.equal(read.body.displayName, `${source.displayName} (imported)`);
    const original = await call("GET", `/api/v1/schemas/${source.id}`);
    assert.equal(original.body.name, "customers", "the tenant's own schema is untouched");
    const pipeline = file.body.entities.pipelines.find((p: { name: string }) => p.name === "customers-daily");
    const copied = imported.body.entities.find((e: { kind: string; sourceId: string }) => e.kind === "pipelines" && e.sourceId === pipeline.id);
    const p = await call("GET", `/api/v1/pipelines/${copied.id}`);
    assert.equal(p.body.schemaId, copy.id);
    const ir = await call("GET", `/api/v1/pipelines/${copied.id}/ir`);
    assert.equal(ir.body.ir.nodes[3].schema, read.body.name, "not the source tenant's schema of the same name");
  });

  /**
   * A file of one pipeline whose source names its connector by name (not by the pipeline's
   * connectorId), with that connector and the schema its target names by name: the file a tenant
   * exports, cut down to what the pipeline needs.
   */
  async function pipelineFile(connectorName: string, decideFlow?: string) {
    const connector = (await call("POST", "/api/v1/connectors", s3Connector({ name: connectorName }))).body;
    const nodes: Array<Record<string, unknown>> = [
      { id: "src", kind: "source", connector: connectorName, config: { path: "customers/", format: "csv" } },
      { id: "out", kind: "target", input: "src", schema: "customers", loadMode: "upsert", upsertKey: ["customer_id"] },
    ];
    const created = await call("POST", "/api/v1/pipelines", { name: `by-name-${connectorName}`, ir: { kind: "pipeline", version: "1.0", nodes } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const file = (await call("GET", "/api/v1/export/full")).body;
    const pipelines = file.entities.pipelines.filter((p: { id: string }) => p.id === created.body.id);
    const belongs = (r: { pipelineId: string }) => r.pipelineId === created.body.id;
    return {
      connector,
      pipeline: created.body,
      file: {
        formatVersion: 1,
        kind: "full",
        entities: {
          connectors: file.entities.connectors.filter((c: { id: string }) => c.id === connector.id),
          schemas: file.entities.schemas.filter((s: { name: string }) => s.name === "customers"),
          pipelines,
          pipelineIrVersions: file.entities.pipelineIrVersions.filter(belongs),
          pipelineTargets: file.entities.pipelineTargets.filter(belongs),
        },
      },
    };
  }
  const importedId = (report: { entities: Array<{ kind: string; sourceId: string; id: string; name: string }> }, kind: string, sourceId: string) =>
    report.entities.find((e) => e.kind === kind && e.sourceId === sourceId)!;

  test("an IR's source naming its connector by name names the imported connector (credentials cleared), not the original, in the same tenant", async () => {
    const { connector, pipeline, file } = await pipelineFile("src-conn");
    const res = await call("POST", "/api/v1/import", file);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const copy = importedId(res.body, "connectors", connector.id);
    assert.equal(copy.name, "src-conn (imported)");
    const ir = await call("GET", `/api/v1/pipelines/${importedId(res.body, "pipelines", pipeline.id).id}/ir`);
    assert.equal(ir.status, 200);
    assert.equal(ir.body.ir.nodes[0].connector, "src-conn (imported)", "not the original connector, whose credentials are still set");
    // What the import stored, the write route accepts as it is.
    const again = await call("POST", `/api/v1/pipelines/${importedId(res.body, "pipelines", pipeline.id).id}/ir`, { ir: ir.body.ir });
    assert.equal(again.status, 201, JSON.stringify(again.body));
    assert.equal((await call("GET", `/api/v1/pipelines/${pipeline.id}/ir`)).body.ir.nodes[0].connector, "src-conn", "the source pipeline is untouched");
  });

  test("in another tenant, the imported IR names the imported connector and passes POST .../ir", async () => {
    const { connector, pipeline, file } = await pipelineFile("cross-conn");
    const fresh = await svc.createTenant("by-name-target");
    const res = await call("POST", "/api/v1/import", file, fresh.apiKey);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const id = importedId(res.body, "pipelines", pipeline.id).id;
    const ir = (await call("GET", `/api/v1/pipelines/${id}/ir`, undefined, fresh.apiKey)).body.ir;
    assert.equal(ir.nodes[0].connector, `${connector.name} (imported)`);
    assert.match(ir.nodes[1].schema, /^customers_imported_[0-9a-f]{6}$/);
    const again = await call("POST", `/api/v1/pipelines/${id}/ir`, { ir }, fresh.apiKey);
    assert.equal(again.status, 201, JSON.stringify(again.body));
  });

  test("an IR naming a connector that is neither in the file nor in the tenant is a 400 naming the field; nothing is written", async () => {
    const { file } = await pipelineFile("absent-conn");
    file.entities.connectors = [];
    const fresh = await svc.createTenant("dangling-connector");
    const res = await call("POST", "/api/v1/import", file, fresh.apiKey);
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body), /entities\.pipelineIrVersions\[0\]\.ir\.nodes\[0\]\(src\)\.connector: names no connector of this tenant: \\"absent-conn\\"/);
    for (const path of ["/api/v1/pipelines", "/api/v1/schemas", "/api/v1/connectors"]) {
      assert.deepEqual((await call("GET", path, undefined, fresh.apiKey)).body.data, [], `${path}: nothing written`);
    }
  });

  test("a decide node and a journey step name a flow by key: rewired to the imported flow; a flow in neither file nor tenant is a 400", async () => {
    const flow = await call("POST", "/api/v1/decision-flows", { name: "Batch flow", key: "f", config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: "default-adaptive" }, { type: "rank" }] } });
    assert.equal(flow.status, 201, JSON.stringify(flow.body));
    const journey = await call("POST", "/api/v1/journeys", { name: "Onboarding", steps: [{ type: "decision", flow: "f", count: 1 }] });
    assert.equal(journey.status, 201, JSON.stringify(journey.body));
    const nodes = [
      { id: "src", kind: "source", config: { path: "customers/", format: "csv" } },
      { id: "dec", kind: "decide", input: "src", flowId: "f", limit: 1 },
      { id: "out", kind: "target", input: "dec", schema: "customers", loadMode: "upsert", upsertKey: ["customer_id"] },
    ];
    const connectorId = (await call("POST", "/api/v1/connectors", s3Connector())).body.id;
    const pipeline = await call("POST", "/api/v1/pipelines", { name: "decides", connectorId, ir: { kind: "pipeline", version: "1.0", nodes } });
    assert.equal(pipeline.status, 201, JSON.stringify(pipeline.body));
    const full = (await call("GET", "/api/v1/export/full")).body;
    const belongs = (r: { pipelineId: string }) => r.pipelineId === pipeline.body.id;
    const file = {
      formatVersion: 1,
      kind: "full",
      entities: {
        decisionFlows: full.entities.decisionFlows.filter((f: { id: string }) => f.id === flow.body.id),
        connectors: full.entities.connectors.filter((c: { id: string }) => c.id === connectorId),
        schemas: full.entities.schemas.filter((s: { name: string }) => s.name === "customers"),
        pipelines: full.entities.pipelines.filter((p: { id: string }) => p.id === pipeline.body.id),
        pipelineIrVersions: full.entities.pipelineIrVersions.filter(belongs),
        pipelineTargets: full.entities.pipelineTargets.filter(belongs),
        journeys: full.entities.journeys.filter((j: { id: string }) => j.id === journey.body.id),
      },
    };
    const fresh = await svc.createTenant("flow-by-key");
    const res = await call("POST", "/api/v1/import", file, fresh.apiKey);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const flowKey = res.body.entities.find((e: { kind: string }) => e.kind === "decisionFlows").key;
    assert.match(flowKey, /^f-imported-[0-9a-f]{6}$/);
    const ir = (await call("GET", `/api/v1/pipelines/${importedId(res.body, "pipelines", pipeline.body.id).id}/ir`, undefined, fresh.apiKey)).body.ir;
    assert.equal(ir.nodes[1].flowId, flowKey);
    const copy = (await call("GET", `/api/v1/journeys/${importedId(res.body, "journeys", journey.body.id).id}`, undefined, fresh.apiKey)).body;
    assert.equal(copy.steps[0].flow, flowKey);
    // The write route accepts the imported journey's steps as they are.
    const direct = await call("POST", "/api/v1/journeys", { name: "Direct", steps: copy.steps }, fresh.apiKey);
    assert.equal(direct.status, 201, JSON.stringify(direct.body));

    // Without the flow in the file, a tenant that has no flow "f" refuses both references.
    const empty = await svc.createTenant("flow-absent");
    const withoutFlow = { ...file, entities: { ...file.entities, decisionFlows: [] } };
    const refused = await call("POST", "/api/v1/import", withoutFlow, empty.apiKey);
    assert.equal(refused.status, 400, JSON.stringify(refused.body));
    assert.match(JSON.stringify(refused.body), /entities\.pipelineIrVersions\[0\]\.ir\.nodes\[1\]\(dec\)\.flowId: names no decision flow of this tenant/);
    const journeyOnly = { formatVersion: 1, kind: "full", entities: { journeys: file.entities.journeys } };
    const refusedJourney = await call("POST", "/api/v1/import", journeyOnly, empty.apiKey);
    assert.equal(refusedJourney.status, 400, JSON.stringify(refusedJourney.body));
    assert.match(JSON.stringify(refusedJourney.body), /entities\.journeys\[0\]\.steps\[0\]\.flow: unknown decision flow f/);
    for (const path of ["/api/v1/pipelines", "/api/v1/journeys", "/api/v1/connectors"]) {
      assert.deepEqual((await call("GET", path, undefined, empty.apiKey)).body.data, [], `${path}: nothing written`);
    }
    // The same journey into the source tenant, which has flow "f": it keeps naming it.
    const same = await call("POST", "/api/v1/import", journeyOnly);
    assert.equal(same.status, 201, JSON.stringify(same.body));
    assert.equal((await call("GET", `/api/v1/journeys/${same.body.entities[0].id}`)).body.steps[0].flow, "f");
  });

  test("a schema name clash names the schema (409)", async () => {
    const fresh = await svc.createTenant("clashing-import");
    // Both names shorten to the same 24 characters before the suffix.
    const schema = (n: number) => {
      const name = `${"a".repeat(30)}${n}`;
      return { id: `0193b5a0-0000-7000-8000-00000000000${n}`, name, displayName: `Wide ${n}`, entityType: "custom", tableName: `ds_${name}`, fields: [{ name: "a", dataType: "text" }] };
    };
    const res = await call("POST", "/api/v1/import", { formatVersion: 1, kind: "full", entities: { schemas: [schema(1), schema(2)] } }, fresh.apiKey);
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.match(res.body.detail, /entities\.schemas\[1\]: a schema named "Wide 2 \(imported\)" or keyed "a{24}_imported_[0-9a-f]{6}" already exists/);
  });

  test("a schema row whose names would reach DDL unchecked is refused", async () => {
    const fresh = await svc.createTenant("hostile-import");
    const file = {
      formatVersion: 1,
      kind: "full",
      entities: { schemas: [{ id: "0193b5a0-0000-7000-8000-000000000001", name: "x", displayName: "x", entityType: "custom", tableName: 'ds_x"; DROP TABLE tenants; --', fields: [{ name: "a", dataType: "text" }] }] },
    };
    const res = await call("POST", "/api/v1/import", file, fresh.apiKey);
    assert.equal(res.status, 400, JSON.stringify(res.body));
    assert.match(JSON.stringify(res.body), /tableName/);
  });
});

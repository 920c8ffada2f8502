import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { connectClient, grpcClient, rest } from "../support/clients.js";
import { DecisionService } from "../../gen/decisioning/v1/decisions_pb.js";

/** One span as the OTLP/HTTP JSON export carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: { stringValue?: string; intValue?: number | string; boolValue?: boolean } }>;
}
const SERVER = 2;

let svc: TestService;
let child: ChildService;
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
let tenant: { tenantId: string; apiKey: string };
let dataKey: string;
const unique = (base: string) => `${base}-${randomBytes(3).toString("hex")}`;

/** Every span the receiver was sent so far. */
function spans(): OtlpSpan[] {
  return receiver.received
    .filter((r) => r.path === "/v1/traces")
    .flatMap((r) => JSON.parse(r.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans as OtlpSpan[])));
}

async function traceOf(traceId: string, until: (all: OtlpSpan[]) => boolean): Promise<OtlpSpan[]> {
  for (let i = 0; i < 100; i++) {
    const all = spans().filter((s) => s.traceId === traceId);
    if (until(all)) return all;
    await sleep(100);
  }
  return spans().filter((s) => s.traceId === traceId);
}

const attr = (span: OtlpSpan, key: string) => {
  const v = span.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? v?.intValue ?? v?.boolValue;
};

/** The span and all spans under it. */
function subtree(all: OtlpSpan[], root: OtlpSpan): OtlpSpan[] {
  const children = all.filter((s) => s.parentSpanId === root.spanId);
  return [root, ...children.flatMap((c) => subtree(all, c))];
}

const hex = (bytes: number) => randomBytes(bytes).toString("hex");

before(async () => {
  receiver = await startHttpReceiver();
  receiver.routes.set("/v1/traces", { statuses: [200], headers: { "content-type": "application/json" } });
  svc = await startTestService();
  tenant = await svc.createTenant();
  const create = async (path: string, body: unknown) => {
    const res = await rest(svc.baseUrl, "POST", `/api/v1/${path}`, { key: tenant.apiKey, body });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body;
  };
  const high = await create("offers", { name: unique("premium"), status: "active", priority: 80 });
  const low = await create("offers", { name: unique("starter"), status: "active", priority: 20 });
  // A tree model, so that scoring goes to the worker pool (SCORING_POOL_MIN_TREE_WALKS=1 below).
  const trees = [{ nodeid: 0, split: "customer.age", split_condition: 30, yes: 1, no: 2, missing: 1, children: [{ nodeid: 1, leaf: -0.5 }, { nodeid: 2, leaf: 0.7 }] }];
  await create("algorithm-models", { name: "GBT", key: "scorer", type: "gradient_boosted", config: { trees } });
  await create("decision-flows", {
    name: "scored", key: "scored", status: "active", autoAssemble: false,
    config: { nodes: [{ type: "candidates", offerIds: [high.id, low.id] }, { type: "score", modelKey: "scorer" }, { type: "rank", count: 1 }] },
  });
  dataKey = (await create("api-keys", { name: "sdk" })).key;
  // The service as an operator starts it, configured by the standard OpenTelemetry variables alone.
  child = await startChildService(svc, {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "100",
      SCORING_POOL_MIN_TREE_WALKS: "1",
    },
  });
});
after(async () => {
  await child?.stop();
  await svc?.stop();
  await receiver?.close();
});

describe("OpenTelemetry traces exported over OTLP/HTTP", () => {
  test("one Recommend: the request span under the client's traceparent, the decision stages, PostgreSQL, Redis and the pool under it, its id in the decision trace", async () => {
    assert.ok(child.logs.some((l) => l.msg === "OpenTelemetry tracing on: spans are exported over OTLP"));
    const traceId = hex(16);
    const clientSpanId = hex(8);
    const res = await rest(child.baseUrl, "POST", "/api/v1/recommend", {
      key: dataKey,
      body: { customerId: unique("ana"), flow: "scored", context: { age: 45 } },
      headers: { traceparent: `00-${traceId}-${clientSpanId}-01` },
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const names = ["decision.qualification", "decision.contact_policy", "decision.scoring", "scoring_pool.run", "decision.ranking"];
    const all = await traceOf(traceId, (s) => names.every((n) => s.some((x) => x.name === n)) && s.some((x) => x.name.startsWith("pg.")));

    const request = all.find((s) => s.kind === SERVER);
    assert.ok(request, `a server span in ${all.map((s) => s.name)}`);
    assert.equal(request.name, "decisioning.v1.DecisionService/Recommend");
    assert.equal(request.parentSpanId, clientSpanId, "child of the client's span");
    assert.equal(attr(request, "decisioning.door"), "rest");
    assert.equal(Number(attr(request, "http.response.status_code")), 200);
    assert.equal(attr(request, "decisioning.tenant_id"), tenant.tenantId);

    const under = subtree(all, request);
    for (const name of names) assert.ok(under.some((s) => s.name === name), `${name} under the request span`);
    const byName = (name: string) => under.find((s) => s.name === name)!;
    assert.equal(byName("scoring_pool.run").parentSpanId, byName("decision.scoring").spanId, "the pool under the scoring stage");
    assert.equal(attr(byName("decision.scoring"), "decision.scoring.path"), "pool");
    for (const stage of ["decision.qualification", "decision.contact_policy", "decision.ranking", "decision.scoring"]) {
      assert.equal(byName(stage).parentSpanId, request.spanId, `${stage} is a child of the request`);
    }
    const pg = under.filter((s) => attr(s, "db.system") === "postgresql" || attr(s, "db.system.name") === "postgresql");
    assert.ok(pg.length > 0, `PostgreSQL spans: ${under.map((s) => s.name)}`);
    const redis = under.filter((s) => attr(s, "db.system") === "redis" || attr(s, "db.system.name") === "redis");
    assert.ok(redis.length > 0, `Redis spans: ${under.map((s) => s.name)}`);

    // The decision trace names the same trace (written asynchronously: read until it is there).
    let trace: { otelTraceId?: string | null } | undefined;
    for (let i = 0; i < 100 && !trace; i++) {
      const list = await rest(child.baseUrl, "GET", `/api/v1/decision-traces?recommendationId=${res.body.recommendationId}`, { key: tenant.apiKey });
      const id = list.body?.traces?.[0]?.id ?? list.body?.data?.[0]?.id;
      if (id) trace = (await rest(child.baseUrl, "GET", `/api/v1/decision-traces/${id}`, { key: tenant.apiKey })).body;
      else await sleep(100);
    }
    assert.ok(trace, "the decision trace was written");
    assert.equal(trace.otelTraceId, traceId);
  });

  test("a malformed traceparent is served normally, in a new trace", async () => {
    const badTraceId = "zz".repeat(16);
    const before = new Set(spans().map((s) => s.traceId));
    const res = await rest(child.baseUrl, "POST", "/api/v1/recommend", {
      key: dataKey,
      body: { customerId: unique("bo") },
      headers: { traceparent: `00-${badTraceId}-${hex(8)}-01`, "x-request-id": "malformed-traceparent" },
    });
    assert.equal(res.status, 200);
    let fresh: OtlpSpan | undefined;
    for (let i = 0; i < 100 && !fresh; i++) {
      fresh = spans().find((s) => s.kind === SERVER && s.name.endsWith("/Recommend") && !before.has(s.traceId));
      if (!fresh) await sleep(100);
    }
    assert.ok(fresh, "a server span in a trace of its own");
    assert.match(fresh.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(fresh.traceId, badTraceId);
    assert.equal(fresh.parentSpanId || undefined, undefined, "a root span");
  });

  test("Connect and gRPC calls get a request span of their own door under the caller's traceparent", async () => {
    for (const [door, client] of [
      ["connect", connectClient(DecisionService, child.baseUrl)],
      ["grpc", grpcClient(DecisionService, child.grpcAddress)],
    ] as const) {
      const traceId = hex(16);
      const parent = hex(8);
      await client.recommend({ customerId: unique(door) }, { headers: { "x-api-key": dataKey, traceparent: `00-${traceId}-${parent}-01` } });
      const all = await traceOf(traceId, (s) => s.some((x) => x.kind === SERVER));
      const request = all.find((s) => s.kind === SERVER);
      assert.ok(request, `${door}: a server span`);
      assert.equal(attr(request, "decisioning.door"), door);
      assert.equal(request.parentSpanId, parent);
    }
  });
});

/**
 * `npm run bench`: the Recommend benchmark of issue 4, section 5, in one command.
 *
 * 1. Without TEST_DATABASE_URL and TEST_REDIS_URL it re-runs itself under bash after sourcing
 *    test/services.sh, which starts a private PostgreSQL and Redis on loopback and stops them when
 *    that shell exits.
 * 2. It creates a database of its own, a tenant (CLI) whose rate limits it raises (CLI), starts the
 *    service as a separate `node src/main.ts` process with bench/probe.mjs preloaded (which measures
 *    the service's event loop from inside), creates 200 active offers and a data-plane key (REST).
 * 3. It drives load from this process: open loop at fixed rates (latency from the scheduled start)
 *    and closed loop for maximum throughput, recording HDR histograms.
 * 4. Baselines in the same run: a grpc-js echo server (bench/echo-server.ts, a separate process),
 *    a bare impression INSERT and the Recommend write through a pool of the service's size, and the
 *    contact-policy Redis round trip (MGET + EVAL).
 * 5. In-process, the inline-versus-pool crossover of scoring (bench/crossover.ts).
 * 6. It stops everything it started and drops its database and Redis keys.
 *
 * Knobs (environment): BENCH_LANE_SECONDS (default 10), BENCH_BASELINE_SECONDS (3),
 * BENCH_WARMUP_SECONDS (2), BENCH_CONCURRENCY (closed-loop in-flight requests, 32),
 * BENCH_JSON (a path to write every figure to as JSON), BENCH_SERVICE_NODE_ARGS (extra node
 * options for the service process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" to profile it),
 * BENCH_WORKERS (the service's WORKERS, 1) and BENCH_CONNECTIONS (HTTP/2 connections per gRPC
 * client, 1; more are needed to spread load over several service processes).
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { availableParallelism, cpus, release } from "node:os";
import { readFileSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import * as grpcJs from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import {
  DecisionService,
  RecommendRequestSchema,
  RecommendResponseSchema,
  RespondRequestSchema,
  RespondResponseSchema,
  type RespondRequest,
  type RecommendRequest,
  type RecommendResponse,
} from "../gen/decisioning/v1/decisions_pb.js";
import { DEFAULT_POOL_MIN_TREE_WALKS } from "../src/config.js";
import { callEachOnce, closedLoop, failures, openLoop, warmUp, type Call, type LaneResult } from "./load.js";
import { openBaselines } from "./baselines.js";
import { measureCrossover, type CrossoverResult } from "./crossover.js";
import {
  BENCH_SECRETS,
  ROOT,
  SERVICE_NODE_OPTIONS,
  createDatabase,
  deleteRedisPrefix,
  expectExits,
  restOk,
  runCli,
  spawnProbed,
  type ProbeReport,
  type ProbedProcess,
} from "./stack.js";
import { customers, offerBody, xgboostTrees } from "./workload.js";

const seconds = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return (Number.isFinite(v) && v > 0 ? v : fallback) * 1000;
};
const LANE_MS = seconds("BENCH_LANE_SECONDS", 10);
const BASELINE_MS = seconds("BENCH_BASELINE_SECONDS", 3);
const WARM_MS = seconds("BENCH_WARMUP_SECONDS", 2);
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_CONCURRENCY) || 32);
/** Service processes (the service's WORKERS) and the gRPC connections each gRPC client opens. */
const WORKERS = Math.max(1, Number(process.env.BENCH_WORKERS) || 1);
const CONNECTIONS = Math.max(1, Number(process.env.BENCH_CONNECTIONS) || 1);
const OFFERS = 200;
const GB_TREES = 100;
const GB_DEPTH = 4;
const RATE_ADAPTIVE = 500;
const RATE_GB = 200;
/** Issue 5: Respond against a bare INSERT, both at 16 clients. */
const RESPOND_CLIENTS = 16;
const CUSTOMERS = 2_000;
/** Open loop: beyond this many outstanding requests, further sends are skipped and counted as failures. */
const OPEN_MAX_IN_FLIGHT = 500;

// ---------------------------------------------------------------------------------------------
// 1. PostgreSQL and Redis: re-run under test/services.sh when they are not given.
// ---------------------------------------------------------------------------------------------

function reexecWithServices(): Promise<number> {
  // bash sources test/services.sh (its EXIT trap stops both servers) and runs this file under node.
  // bash gets its own process group; our signals are passed on to it as SIGINT, which the inner
  // run handles by cleaning up and exiting, after which bash exits and its trap runs.
  const child = spawn("bash", ["-c", 'source test/services.sh && node --import tsx bench/run.ts "$@"', "bench", ...process.argv.slice(2)], {
    cwd: ROOT,
    env: { ...process.env, BENCH_SERVICES_STARTED: "1" },
    stdio: "inherit",
    detached: true,
  });
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(signal, () => {
      try {
        process.kill(-child.pid!, "SIGINT");
      } catch {
        /* already gone */
      }
    });
  }
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

// ---------------------------------------------------------------------------------------------
// Cleanup: everything started is registered here and stopped in reverse order, once.
// ---------------------------------------------------------------------------------------------

const closers: Array<{ what: string; close: () => Promise<unknown> }> = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const { what, close } of closers.reverse()) {
      await Promise.race([close(), sleep(20_000).then(() => Promise.reject(new Error("timed out")))]).catch((err) =>
        console.error(`bench: stopping ${what} failed: ${(err as Error).message}`),
      );
    }
  })();
  return cleaning;
}

// ---------------------------------------------------------------------------------------------
// A gRPC client for DecisionService/Recommend on @grpc/grpc-js, with the generated descriptors.
// ---------------------------------------------------------------------------------------------

/**
 * `connections` HTTP/2 connections, used in turn: a supervised service (WORKERS > 1) spreads load
 * per connection, as a client pool or a proxy in front of it would. Each client gets its own
 * subchannel pool, since grpc-js otherwise shares one connection per target. Channelz is off, as
 * on the servers: its per-call bookkeeping is CPU the client would take from the server.
 */
function grpcRecommender(address: string, apiKey: string, connections = CONNECTIONS) {
  const clients = Array.from(
    { length: connections },
    () => new grpcJs.Client(address, grpcJs.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1, "grpc.enable_channelz": 0 }),
  );
  let turn = 0;
  const metadata = new grpcJs.Metadata();
  metadata.set("x-api-key", apiKey);
  /** One unary method of the service, with the generated descriptors (toBinary/fromBinary). */
  const unary =
    <I extends DescMessage, O extends DescMessage>(path: string, input: I, output: O) =>
    (req: MessageShape<I>, timeoutMs = 10_000): Promise<MessageShape<O>> =>
      new Promise((resolve, reject) =>
        clients[turn++ % clients.length].makeUnaryRequest(
          path,
          (m: MessageShape<I>) => Buffer.from(toBinary(input, m)),
          (b: Buffer) => fromBinary(output, b),
          req,
          metadata,
          { deadline: Date.now() + timeoutMs },
          (err, res) => (err ? reject(err) : resolve(res!)),
        ),
      );
  const recommend = unary("/decisioning.v1.DecisionService/Recommend", RecommendRequestSchema, RecommendResponseSchema);
  return {
    /** `opts.headers` is accepted for symmetry with connect clients and ignored: the key is fixed. */
    recommend: (req: RecommendRequest, opts: { timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<RecommendResponse> =>
      recommend(req, opts.timeoutMs),
    respond: unary("/decisioning.v1.OutcomeService/Respond", RespondRequestSchema, RespondResponseSchema),
    close: () => clients.forEach((c) => c.close()),
  };
}

// ---------------------------------------------------------------------------------------------
// Machine CPU (all cores) from /proc/stat, to show when the box itself is the limit.
// ---------------------------------------------------------------------------------------------

function cpuTimes(): { busy: number; total: number } | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0];
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = v[3] + (v[4] ?? 0);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// Lanes
// ---------------------------------------------------------------------------------------------

interface Lane extends LaneResult {
  name: string;
  /** The server process measured from inside (bench/probe.mjs), when the lane drives one. */
  server: (ProbeReport & { cpuMsPerRequest: number }) | null;
  /** Busy share of all cores during the lane (machine-wide). */
  machineCpu: number | null;
  extra?: Record<string, unknown>;
}

const lanes: Lane[] = [];
const fmt = (n: number | null | undefined, d = 2) => (n === null || n === undefined || !Number.isFinite(n) ? "n/a" : n.toFixed(d));

function printLane(l: Lane): void {
  const what = l.mode === "open" ? `open ${l.targetRate}/s` : `closed c=${l.concurrency}`;
  const srv = l.server
    ? ` | server: loop delay p99 ${fmt(l.server.eventLoopDelay.p99)} ms, loop busy ${fmt(l.server.eventLoopUtilization * 100, 0)}%, CPU ${fmt(l.server.cpuMsPerRequest, 3)} ms/req`
    : "";
  console.log(
    `  ${l.name.padEnd(34)} ${what.padEnd(14)} ${fmt(l.throughput, 0).padStart(6)} req/s  p50 ${fmt(l.latency.p50).padStart(7)}  p99 ${fmt(l.latency.p99).padStart(7)}  p99.9 ${fmt(l.latency.p999).padStart(7)}  max ${fmt(l.latency.max).padStart(7)} ms` +
      `  fail ${failures(l)}${srv} | machine CPU ${fmt((l.machineCpu ?? NaN) * 100, 0)}% | client loop delay p99 ${fmt(l.clientEventLoopP99Ms)} ms`,
  );
  if (l.firstError) console.log(`    first error: ${l.firstError}`);
}

/** Whether the service's asynchronous work (the decision-trace writer) has caught up, and what it stored. */
interface Settler {
  idle(): Promise<boolean>;
  counts(): Promise<{ recommendations: number; traces: number }>;
}
let settler: Settler | null = null;

/**
 * Waits until the server is quiet: its event loop busy < 15% over 250 ms and, through `settler`,
 * no trace INSERT running and the trace count unchanged, twice in a row. A lane must not inherit
 * the work of the one before it (an overloaded open-loop lane leaves requests the server still
 * works through after their clients gave up, and the trace writer drains its queue afterwards).
 * Returns how long it waited. Bounded.
 */
async function quiesce(server: ProbedProcess, maxMs = 90_000): Promise<number> {
  const t0 = Date.now();
  let calm = 0;
  while (Date.now() - t0 < maxMs) {
    await server.probe.reset();
    await sleep(250);
    const loopBusy = (await server.probe.report()).eventLoopUtilization >= 0.15;
    const writing = settler ? !(await settler.idle()) : false;
    calm = loopBusy || writing ? 0 : calm + 1;
    if (calm >= 2) return Date.now() - t0;
  }
  console.log(`    (the server was still busy after ${maxMs / 1000} s of waiting; going on)`);
  return Date.now() - t0;
}

async function lane(
  name: string,
  call: Call,
  how: { rate: number } | { concurrency: number },
  o: { server?: ProbedProcess | null; durationMs?: number; warmMs?: number } = {},
): Promise<Lane> {
  const durationMs = o.durationMs ?? LANE_MS;
  const warmMs = o.warmMs ?? WARM_MS;
  // Every service lane ends by waiting for the server to be quiet, so none starts with a backlog.
  // Open-loop lanes warm up gently (a few requests in flight, half the time), so that a rate the
  // server cannot carry does not start the lane with a backlog; closed-loop lanes warm up as they run.
  await warmUp(call, "rate" in how ? warmMs / 2 : warmMs, "rate" in how ? 4 : how.concurrency);
  if (o.server) await quiesce(o.server);
  // Only the service stores anything (the echo server has no HTTP port and no database).
  const stored0 = o.server?.ports.httpPort !== undefined && settler ? await settler.counts() : null;
  await o.server?.probe.reset();
  const cpu0 = cpuTimes();
  const result =
    "rate" in how
      ? await openLoop(call, { rate: how.rate, durationMs, maxInFlight: OPEN_MAX_IN_FLIGHT })
      : await closedLoop(call, { concurrency: how.concurrency, durationMs });
  const cpu1 = cpuTimes();
  const report = o.server ? await o.server.probe.report() : null;
  const l: Lane = {
    name,
    ...result,
    server: report ? { ...report, cpuMsPerRequest: report.cpuMs / Math.max(1, result.ok) } : null,
    machineCpu: cpu0 && cpu1 ? (cpu1.busy - cpu0.busy) / Math.max(1, cpu1.total - cpu0.total) : null,
  };
  lanes.push(l);
  printLane(l);
  if (o.server && stored0 && settler) {
    const drainMs = await quiesce(o.server);
    const stored1 = await settler.counts();
    l.extra = {
      recommendationsStored: stored1.recommendations - stored0.recommendations,
      tracesStored: stored1.traces - stored0.traces,
      drainAfterLaneMs: drainMs,
    };
    console.log(
      `    stored: ${l.extra.recommendationsStored} recommendations, ${l.extra.tracesStored} traces; the server was quiet again ${fmt(drainMs / 1000, 1)} s after the lane`,
    );
  }
  return l;
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

async function run(): Promise<void> {
  const dbBase = process.env.TEST_DATABASE_URL!;
  const redisUrl = process.env.TEST_REDIS_URL!;
  const started = new Date();
  const machine = {
    date: started.toISOString(),
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? "unknown",
    node: process.version,
    kernel: release(),
  };
  console.log(`bench: ${machine.date}, ${machine.nproc} CPUs (${machine.cpu}), node ${machine.node}, linux ${machine.kernel}`);
  console.log(`bench: lanes ${LANE_MS / 1000} s, baselines ${BASELINE_MS / 1000} s, warm-up ${WARM_MS / 1000} s, closed loop ${CONCURRENCY} in flight`);
  console.log(`bench: the service runs ${WORKERS} process(es) (WORKERS); gRPC clients open ${CONNECTIONS} connections each`);
  // Other work on the machine skews every figure: say how busy it was before we started anything.
  const idle0 = cpuTimes();
  await sleep(1000);
  const idle1 = cpuTimes();
  const busyBefore = idle0 && idle1 ? (idle1.busy - idle0.busy) / Math.max(1, idle1.total - idle0.total) : null;
  const loadavg = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`bench: machine busy ${fmt((busyBefore ?? NaN) * 100, 0)}% before the run (load average ${loadavg})${busyBefore !== null && busyBefore > 0.15 ? ": OTHER PROCESSES ARE USING THE CPU, figures will be low" : ""}`);

  // --- database, Redis prefix, tenant --------------------------------------------------------
  const db = await createDatabase(dbBase);
  closers.push({ what: `database ${db.name}`, close: () => db.drop() });
  const redisKeyPrefix = `bench:${randomBytes(6).toString("hex")}:`;
  closers.push({ what: "Redis keys", close: () => deleteRedisPrefix(redisUrl, redisKeyPrefix) });
  const env = { DATABASE_URL: db.url, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisKeyPrefix, ...BENCH_SECRETS };
  const tenant = (await runCli(["tenant", "create", "--name", "bench"], { ...env, LOG_LEVEL: "warn" })) as { tenantId: string; userId: string; apiKey: string };
  const limits = { default: { limit: 100_000_000, windowSeconds: 60 }, offers: { limit: 100_000_000, windowSeconds: 60 } };
  await runCli(["tenant", "set-limits", "--tenant", tenant.tenantId, "--limits", JSON.stringify(limits)], { ...env, LOG_LEVEL: "warn" });
  console.log(`bench: database ${db.name}, tenant ${tenant.tenantId} with rate limits ${JSON.stringify(limits)}`);

  // --- the service and the echo baseline, each a process of its own --------------------------
  const nodeArgs = [...SERVICE_NODE_OPTIONS, ...(process.env.BENCH_SERVICE_NODE_ARGS ?? "").split(/\s+/).filter(Boolean)];
  const service = await spawnProbed("src/main.ts", { ...env, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "info", WORKERS: String(WORKERS) }, "the service", nodeArgs);
  closers.push({ what: "the service", close: () => service.stop() });
  const echo = await spawnProbed("bench/echo-server.ts", {}, "the echo server");
  closers.push({ what: "the echo server", close: () => echo.stop() });
  const baseUrl = `http://127.0.0.1:${service.ports.httpPort}`;
  console.log(`bench: service pid ${service.child.pid} on http ${service.ports.httpPort} / grpc ${service.ports.grpcPort}; echo pid ${echo.child.pid} on grpc ${echo.ports.grpcPort}`);

  // --- catalog and keys ----------------------------------------------------------------------
  const offerIds: string[] = [];
  for (let i = 0; i < OFFERS; i += 10) {
    const batch = await Promise.all(Array.from({ length: Math.min(10, OFFERS - i) }, (_, j) => restOk(baseUrl, "POST", "/api/v1/offers", tenant.apiKey, offerBody(i + j), 201)));
    offerIds.push(...batch.map((o) => o.id as string));
  }
  const dataKey = (await restOk(baseUrl, "POST", "/api/v1/api-keys", tenant.apiKey, { name: "bench" }, 201)).key as string;
  console.log(`bench: ${offerIds.length} active offers created, data-plane key minted`);

  // --- clients -------------------------------------------------------------------------------
  const people = customers(CUSTOMERS);
  const requests = (flow?: string): RecommendRequest[] =>
    people.map((p) => create(RecommendRequestSchema, { customerId: p.customerId, attributes: p.attributes, context: p.context, flow: flow ?? "" }));
  const adaptiveRequests = requests();
  const headers = { "x-api-key": dataKey };
  // gRPC lanes (service and echo) use a @grpc/grpc-js client: on two cores the client competes with
  // the server for CPU, and grpc-js spends about half the client CPU per call that connect-node's
  // gRPC transport does. The Connect lane uses connect-node's Connect transport (JSON, HTTP/1.1).
  const grpc = grpcRecommender(`127.0.0.1:${service.ports.grpcPort}`, dataKey);
  closers.push({ what: "gRPC client", close: async () => grpc.close() });
  const echoClient = grpcRecommender(`127.0.0.1:${echo.ports.grpcPort}`, dataKey);
  closers.push({ what: "echo client", close: async () => echoClient.close() });
  const connect = createClient(DecisionService, createConnectTransport({ baseUrl: `${baseUrl}/api/v1`, httpVersion: "1.1" }));
  type Recommender = { recommend(req: RecommendRequest, opts?: { headers?: Record<string, string>; timeoutMs?: number }): Promise<RecommendResponse> };
  const caller = (client: Recommender, reqs: RecommendRequest[]): Call => (i) => client.recommend(reqs[i % reqs.length], { headers, timeoutMs: 10_000 });

  const first = await grpc.recommend(adaptiveRequests[0], { headers });
  console.log(
    `bench: first Recommend: ${first.offers.length} offers, propensitySource ${first.offers[0]?.propensitySource}, degraded ${first.degraded}, flowId ${first.flowId ?? "(default flow)"}`,
  );
  if (first.offers.length === 0) throw new Error("Recommend returned no offers; the benchmark would measure nothing useful");

  const tracesDb = new pg.Client({ connectionString: db.url });
  await tracesDb.connect();
  closers.push({ what: "trace counter connection", close: () => tracesDb.end() });
  let lastTraceCount = -1;
  settler = {
    async idle() {
      const { rows } = await tracesDb.query(
        `SELECT (SELECT count(*)::int FROM decision_traces) AS traces,
                (SELECT count(*)::int FROM pg_stat_activity
                  WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()
                    AND query LIKE 'INSERT INTO decision_traces%') AS writing`,
      );
      const quiet = rows[0].writing === 0 && rows[0].traces === lastTraceCount;
      lastTraceCount = rows[0].traces;
      return quiet;
    },
    async counts() {
      const { rows } = await tracesDb.query(
        "SELECT (SELECT count(*)::int FROM recommendations) AS recommendations, (SELECT count(*)::int FROM decision_traces) AS traces",
      );
      return rows[0];
    },
  };
  const setTraces = async (enabled: boolean) => {
    await restOk(baseUrl, "PUT", "/api/v1/tenant-settings", tenant.apiKey, { decisionTraceEnabled: enabled }, 200);
    await grpc.recommend(adaptiveRequests[1], { headers }); // rebuilds the snapshot before measuring
  };

  // --- A. storage baselines (bench process → the service's PostgreSQL and Redis) ---------------
  console.log("\nA. storage baselines (through a sequelize pool of 10 and ioredis, from this process)");
  const base = await openBaselines({ databaseUrl: db.url, redisUrl, redisKeyPrefix, tenantId: tenant.tenantId, offerIds });
  closers.push({ what: "baseline pools", close: () => base.close() });
  const short = { durationMs: BASELINE_MS, warmMs: Math.min(WARM_MS, 1000) };
  const redisOpen = await lane("redis MGET+EVAL", base.redis, { rate: RATE_ADAPTIVE }, short);
  const redisClosed = await lane("redis MGET+EVAL", base.redis, { concurrency: CONCURRENCY }, short);
  const insertOpen = await lane("pg bare impression INSERT", base.insert, { rate: RATE_ADAPTIVE }, short);
  const insertClosed = await lane("pg bare impression INSERT", base.insert, { concurrency: 10 }, short);
  const writeOpen = await lane("pg Recommend write (rec + 3 imps)", base.write, { rate: RATE_ADAPTIVE }, short);
  const writeClosed = await lane("pg Recommend write (rec + 3 imps)", base.write, { concurrency: 10 }, short);

  // --- B. gRPC echo baseline (separate grpc-js process, same client code) ----------------------
  console.log("\nB. grpc-js echo server (separate process, same client as the gRPC lanes)");
  const echoCall = caller(echoClient, adaptiveRequests);
  const echoClosed = await lane("echo gRPC", echoCall, { concurrency: CONCURRENCY }, { server: echo });
  const echoOpenA = await lane("echo gRPC", echoCall, { rate: RATE_ADAPTIVE }, { server: echo });
  const echoOpenGb = await lane("echo gRPC", echoCall, { rate: RATE_GB }, { server: echo });

  // --- C. Recommend, default flow (adaptive), 200 offers, traces on -------------------------
  console.log(`\nC. Recommend, default flow (adaptive model), ${OFFERS} active offers, traces on (sample rate 1.0)`);
  const grpcCall = caller(grpc, adaptiveRequests);
  // Every customer once before measuring: the service caches customer attributes per customer, and
  // a time-based warm-up reaches only part of the 2,000, so the first lane would pay cold lookups
  // that no later lane pays.
  const primed = await callEachOnce(grpcCall, CUSTOMERS, 16);
  console.log(`bench: every customer seen once before the first Recommend lane (${primed} requests)`);
  const recClosed = await lane("Recommend gRPC adaptive", grpcCall, { concurrency: CONCURRENCY }, { server: service });
  const connClosed = await lane("Recommend Connect JSON adaptive", caller(connect, adaptiveRequests), { concurrency: CONCURRENCY }, { server: service });
  const recOpen = await lane("Recommend gRPC adaptive", grpcCall, { rate: RATE_ADAPTIVE }, { server: service });
  // Latency where the service is not overloaded: half of the throughput it just reached.
  const halfRate = (l: Lane) => Math.max(10, Math.floor(l.throughput / 2 / 10) * 10);
  const recOpenHalf = await lane("Recommend gRPC adaptive (½ max)", grpcCall, { rate: halfRate(recClosed) }, { server: service });

  // --- D. the same with traces off -------------------------------------------------------------
  console.log("\nD. Recommend, default flow, traces off (PUT /api/v1/tenant-settings {decisionTraceEnabled: false})");
  await setTraces(false);
  const recOpenOff = await lane("Recommend gRPC adaptive, no traces", grpcCall, { rate: RATE_ADAPTIVE }, { server: service });
  const recClosedOff = await lane("Recommend gRPC adaptive, no traces", grpcCall, { concurrency: CONCURRENCY }, { server: service });
  const recOpenHalfOff = await lane("Recommend gRPC adaptive, no traces (½ max)", grpcCall, { rate: recOpenHalf.targetRate! }, { server: service });
  await setTraces(true);

  // --- E. Recommend with a 100-tree gradient-boosted model --------------------------------------
  console.log(`\nE. Recommend, flow "gbt" scoring with a ${GB_TREES}-tree depth-${GB_DEPTH} gradient-boosted model (${GB_TREES * OFFERS} tree walks per request)`);
  const trees = xgboostTrees(GB_TREES, GB_DEPTH);
  await restOk(baseUrl, "POST", "/api/v1/algorithm-models", tenant.apiKey, { name: "bench gbt", key: "gbt100", type: "gradient_boosted", config: { trees } }, 201);
  await restOk(
    baseUrl,
    "POST",
    "/api/v1/decision-flows",
    tenant.apiKey,
    { name: "bench gbt", key: "gbt", status: "active", config: { nodes: [{ type: "candidates" }, { type: "score", modelKey: "gbt100" }, { type: "rank" }] } },
    201,
  );
  const gbRequests = requests("gbt");
  const gbFirst = await grpc.recommend(gbRequests[0], { headers });
  console.log(
    `bench: first gbt Recommend: ${gbFirst.offers.length} offers, propensitySource ${gbFirst.offers[0]?.propensitySource}, degraded ${gbFirst.degraded}, scores ${gbFirst.offers.map((o) => o.score.toFixed(3)).join(", ")}`,
  );
  if (gbFirst.degraded || gbFirst.offers[0]?.propensitySource !== "model") throw new Error("the gradient-boosted flow did not score with the model");
  const gbCall = caller(grpc, gbRequests);
  const gbOpen = await lane("Recommend gRPC gbt100", gbCall, { rate: RATE_GB }, { server: service });
  const gbClosed = await lane("Recommend gRPC gbt100", gbCall, { concurrency: CONCURRENCY }, { server: service });
  const gbOpenHalf = await lane("Recommend gRPC gbt100 (½ max)", gbCall, { rate: halfRate(gbClosed) }, { server: service });
  await setTraces(false);
  const gbOpenOff = await lane("Recommend gRPC gbt100, no traces", gbCall, { rate: RATE_GB }, { server: service });

  // --- G. Respond (issue 5): fresh keys vs a bare INSERT at 16 clients, replays, a 10:1 mix ---------
  console.log("\nG. Respond over gRPC (16 clients in flight; attributed by recommendationId and rank)");
  await setTraces(true);
  const recent = (await tracesDb.query("SELECT id, customer_id FROM recommendations ORDER BY created_at DESC LIMIT 5000")).rows as Array<{ id: string; customer_id: string }>;
  const outcomeFor = (i: number, keyOf: (i: number) => string): RespondRequest => {
    const rec = recent[i % recent.length];
    return create(RespondRequestSchema, { customerId: rec.customer_id, outcome: "click", recommendationId: rec.id, rank: 1, idempotencyKey: keyOf(i) });
  };
  const run0 = randomBytes(4).toString("hex");
  // Lanes number their calls from 0 again after warm-up, so fresh keys come from a counter of their own.
  let sent = 0;
  const freshKey = (n: number) => `fresh-${run0}-${n}`;
  const fresh: Call = () => {
    const n = sent++;
    return grpc.respond(outcomeFor(n, freshKey));
  };
  const respondFresh = await lane("Respond gRPC, fresh keys", fresh, { concurrency: RESPOND_CLIENTS }, { server: service });
  const written = sent;
  const replay: Call = (i) => grpc.respond(outcomeFor(i % written, freshKey));
  const respondReplay = await lane("Respond gRPC, replayed keys", replay, { concurrency: RESPOND_CLIENTS }, { server: service });
  const insert16 = await lane("pg bare impression INSERT (16 clients)", base.insert, { concurrency: RESPOND_CLIENTS }, short);
  let mixedSent = 0;
  const mixed: Call = (i) =>
    i % 11 === 10
      ? grpc.respond(outcomeFor(mixedSent++, (n) => `mixed-${run0}-${n}`))
      : grpc.recommend(adaptiveRequests[i % adaptiveRequests.length], { headers });
  const mixedLane = await lane("10 Recommend : 1 Respond, gRPC", mixed, { concurrency: CONCURRENCY }, { server: service });

  const traceSizes = (
    await tracesDb.query(
      `SELECT flow_id IS NOT NULL AS gbt, count(*)::int AS n, avg(octet_length(trace))::int AS avg_chars, max(octet_length(trace))::int AS max_chars
         FROM decision_traces GROUP BY 1 ORDER BY 1`,
    )
  ).rows as Array<{ gbt: boolean; n: number; avg_chars: number; max_chars: number }>;
  for (const t of traceSizes) {
    console.log(`bench: ${t.n} ${t.gbt ? "gbt100" : "adaptive"} traces stored, ${Math.round(t.avg_chars / 1024)} KiB (gzipped JSON) each on average (max ${Math.round(t.max_chars / 1024)} KiB)`);
  }
  const serviceWarnings = service.warnings.filter((w) => !/SECURITY/.test(String(w.msg)));
  // Stop the servers before the in-process measurement so it has the machine to itself.
  await echo.stop();
  await service.stop();

  // --- F. inline versus pool ---------------------------------------------------------------------
  console.log("\nF. scoring inline vs Piscina pool (in this process; gradient-boosted, depth 4, explain on as with traces)");
  const crossover = await measureCrossover({ log: console.log, budgetMs: 250 });

  // --- Summary -------------------------------------------------------------------------------------
  const ratio = (a: number, b: number) => a / b;
  type Row = { figure: string; value: string; baseline: string; ratio: string; target: string; met: string };
  const rows: Row[] = [];
  const add = (figure: string, value: number, unit: string, baselineName: string, baseline: number, target?: { text: string; ok: boolean }) =>
    rows.push({
      figure,
      value: `${fmt(value, unit === "req/s" ? 0 : 2)} ${unit}`,
      baseline: `${baselineName} ${fmt(baseline, unit === "req/s" ? 0 : 2)} ${unit}`,
      ratio: fmt(ratio(value, baseline), 3),
      target: target?.text ?? "",
      met: target ? (target.ok ? "met" : "MISSED") : "",
    });
  const clean = (l: Lane) => failures(l) === 0;
  add("gRPC Recommend max throughput (closed)", recClosed.throughput, "req/s", "echo closed", echoClosed.throughput, {
    text: ">= 0.25 × echo",
    ok: ratio(recClosed.throughput, echoClosed.throughput) >= 0.25,
  });
  add(`gRPC Recommend p99 @ ${RATE_ADAPTIVE}/s`, recOpen.latency.p99, "ms", `echo p99 @ ${RATE_ADAPTIVE}/s`, echoOpenA.latency.p99, {
    text: "<= 10 ms",
    ok: recOpen.latency.p99 <= 10 && clean(recOpen),
  });
  add(`gRPC Recommend gbt100 p99 @ ${RATE_GB}/s`, gbOpen.latency.p99, "ms", `echo p99 @ ${RATE_GB}/s`, echoOpenGb.latency.p99, {
    text: "<= 20 ms",
    ok: gbOpen.latency.p99 <= 20 && clean(gbOpen),
  });
  add("Connect JSON Recommend max throughput (closed)", connClosed.throughput, "req/s", "gRPC closed", recClosed.throughput, {
    text: ">= 0.5 × gRPC",
    ok: ratio(connClosed.throughput, recClosed.throughput) >= 0.5,
  });
  add(`service event-loop delay p99 @ ${RATE_ADAPTIVE}/s, traces on`, recOpen.server!.eventLoopDelay.p99, "ms", "echo server loop p99", echoOpenA.server!.eventLoopDelay.p99, {
    text: "<= 5 ms",
    ok: recOpen.server!.eventLoopDelay.p99 <= 5,
  });
  add(`service event-loop delay p99 @ ${RATE_ADAPTIVE}/s, traces off`, recOpenOff.server!.eventLoopDelay.p99, "ms", "echo server loop p99", echoOpenA.server!.eventLoopDelay.p99, {
    text: "<= 5 ms",
    ok: recOpenOff.server!.eventLoopDelay.p99 <= 5,
  });
  add(`service event-loop delay p99 @ ${RATE_GB}/s gbt100, traces on`, gbOpen.server!.eventLoopDelay.p99, "ms", "echo server loop p99", echoOpenGb.server!.eventLoopDelay.p99, {
    text: "<= 5 ms",
    ok: gbOpen.server!.eventLoopDelay.p99 <= 5,
  });
  add(`service event-loop delay p99 @ ${RATE_GB}/s gbt100, traces off`, gbOpenOff.server!.eventLoopDelay.p99, "ms", "echo server loop p99", echoOpenGb.server!.eventLoopDelay.p99, {
    text: "<= 5 ms",
    ok: gbOpenOff.server!.eventLoopDelay.p99 <= 5,
  });
  add(`gRPC Recommend p99 @ ${RATE_ADAPTIVE}/s, traces off`, recOpenOff.latency.p99, "ms", "traces on", recOpen.latency.p99, { text: "<= 10 ms", ok: recOpenOff.latency.p99 <= 10 && clean(recOpenOff) });
  add(`gRPC Recommend gbt100 p99 @ ${RATE_GB}/s, traces off`, gbOpenOff.latency.p99, "ms", "traces on", gbOpen.latency.p99, { text: "<= 20 ms", ok: gbOpenOff.latency.p99 <= 20 && clean(gbOpenOff) });
  add(`gRPC Recommend p99 @ ${recOpenHalf.targetRate}/s (½ of max)`, recOpenHalf.latency.p99, "ms", `echo p99 @ ${RATE_ADAPTIVE}/s`, echoOpenA.latency.p99);
  add(`gRPC Recommend gbt100 p99 @ ${gbOpenHalf.targetRate}/s (½ of max)`, gbOpenHalf.latency.p99, "ms", `echo p99 @ ${RATE_GB}/s`, echoOpenGb.latency.p99);
  add(`service event-loop delay p99 @ ${recOpenHalf.targetRate}/s (½ of max)`, recOpenHalf.server!.eventLoopDelay.p99, "ms", "echo server loop p99", echoOpenA.server!.eventLoopDelay.p99);
  add(`gRPC Recommend p99 @ ${recOpenHalf.targetRate}/s (½ of max), traces off`, recOpenHalfOff.latency.p99, "ms", "traces on", recOpenHalf.latency.p99);
  add(`service event-loop delay p99 @ ${recOpenHalf.targetRate}/s (½ of max), traces off`, recOpenHalfOff.server!.eventLoopDelay.p99, "ms", "traces on", recOpenHalf.server!.eventLoopDelay.p99);
  add("gRPC Recommend max throughput, traces off", recClosedOff.throughput, "req/s", "traces on", recClosed.throughput);
  add("gRPC Recommend gbt100 max throughput", gbClosed.throughput, "req/s", "adaptive", recClosed.throughput);
  // Unloaded latency against its parts: the ½-of-max lane, where the service is not queueing.
  const half = `gRPC Recommend p50 @ ${recOpenHalf.targetRate}/s (½ of max)`;
  add(half, recOpenHalf.latency.p50, "ms", `echo p50 @ ${RATE_ADAPTIVE}/s`, echoOpenA.latency.p50);
  add(half, recOpenHalf.latency.p50, "ms", `Recommend write p50 @ ${RATE_ADAPTIVE}/s`, writeOpen.latency.p50);
  add(half, recOpenHalf.latency.p50, "ms", `bare INSERT p50 @ ${RATE_ADAPTIVE}/s`, insertOpen.latency.p50);
  add(half, recOpenHalf.latency.p50, "ms", `Redis MGET+EVAL p50 @ ${RATE_ADAPTIVE}/s`, redisOpen.latency.p50);
  add("gRPC Recommend max throughput (closed)", recClosed.throughput, "req/s", "Recommend write closed (pool 10)", writeClosed.throughput);
  add("gRPC Recommend max throughput (closed)", recClosed.throughput, "req/s", "bare INSERT closed (pool 10)", insertClosed.throughput);
  add("gRPC Recommend max throughput (closed)", recClosed.throughput, "req/s", "Redis MGET+EVAL closed", redisClosed.throughput);
  add("service CPU per Recommend (closed loop)", recClosed.server!.cpuMsPerRequest, "ms", "echo server CPU per call (closed loop)", echoClosed.server!.cpuMsPerRequest);
  add("service CPU per Recommend, traces off (closed loop)", recClosedOff.server!.cpuMsPerRequest, "ms", "traces on", recClosed.server!.cpuMsPerRequest);
  add("service CPU per gbt100 Recommend (closed loop)", gbClosed.server!.cpuMsPerRequest, "ms", "echo server CPU per call (closed loop)", echoClosed.server!.cpuMsPerRequest);
  add("scoring crossover (tree walks)", crossover.crossoverWalks ?? NaN, "walks", "DEFAULT_POOL_MIN_TREE_WALKS", DEFAULT_POOL_MIN_TREE_WALKS);
  add("gRPC Respond, fresh keys (16 clients)", respondFresh.throughput, "req/s", "bare INSERT (16 clients)", insert16.throughput, {
    text: ">= 0.5 × bare INSERT",
    ok: clean(respondFresh) && ratio(respondFresh.throughput, insert16.throughput) >= 0.5,
  });
  add("gRPC Respond, replayed keys (16 clients)", respondReplay.throughput, "req/s", "fresh keys", respondFresh.throughput, {
    text: ">= 2 × fresh keys",
    ok: clean(respondReplay) && ratio(respondReplay.throughput, respondFresh.throughput) >= 2,
  });
  add("service CPU per Respond, replayed keys", respondReplay.server!.cpuMsPerRequest, "ms", "fresh keys", respondFresh.server!.cpuMsPerRequest, {
    text: "<= 0.5 × fresh keys",
    ok: ratio(respondReplay.server!.cpuMsPerRequest, respondFresh.server!.cpuMsPerRequest) <= 0.5,
  });
  add("10 Recommend : 1 Respond max throughput (closed)", mixedLane.throughput, "req/s", "Recommend alone", recClosed.throughput);

  console.log("\nSummary (every figure against a baseline measured in this run)\n");
  console.log("| figure | value | baseline | ratio | target | |");
  console.log("|---|---|---|---|---|---|");
  for (const r of rows) console.log(`| ${r.figure} | ${r.value} | ${r.baseline} | ${r.ratio} | ${r.target} | ${r.met} |`);

  console.log("\nLanes\n");
  // Each Recommend lane against the echo lane of the same shape: throughput for closed loops, p99
  // at the same (or, for the ½-of-max lanes, the nearest) rate for open loops.
  const echoLanes = lanes.filter((l) => l.name.startsWith("echo"));
  const vsEcho = (l: Lane): string => {
    if (!l.name.startsWith("Recommend")) return "baseline";
    if (l.mode === "closed") return `${fmt(l.throughput / echoClosed.throughput, 3)}× echo req/s`;
    const open = echoLanes.filter((e) => e.mode === "open");
    const e = open.reduce((a, b) => (Math.abs(b.targetRate! - l.targetRate!) < Math.abs(a.targetRate! - l.targetRate!) ? b : a));
    return `${fmt(l.latency.p99 / e.latency.p99, 1)}× echo p99 @ ${e.targetRate}/s`;
  };
  console.log("| lane | load | req/s | p50 ms | p99 ms | p99.9 ms | max ms | failed | vs echo | server loop delay p99 ms | server loop busy | server CPU ms/req | machine CPU | client loop delay p99 ms |");
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (const l of lanes) {
    console.log(
      `| ${l.name} | ${l.mode === "open" ? `open ${l.targetRate}/s` : `closed, ${l.concurrency} in flight`} | ${fmt(l.throughput, 0)} | ${fmt(l.latency.p50)} | ${fmt(l.latency.p99)} | ${fmt(l.latency.p999)} | ${fmt(l.latency.max)} | ${failures(l)} | ${vsEcho(l)} | ` +
        `${l.server ? fmt(l.server.eventLoopDelay.p99) : ""} | ${l.server ? `${fmt(l.server.eventLoopUtilization * 100, 0)}%` : ""} | ${l.server ? fmt(l.server.cpuMsPerRequest, 3) : ""} | ${fmt((l.machineCpu ?? NaN) * 100, 0)}% | ${fmt(l.clientEventLoopP99Ms)} |`,
    );
  }
  printCrossover(crossover);
  if (serviceWarnings.length) {
    const kinds = new Map<string, number>();
    for (const w of serviceWarnings) {
      const k = `level ${w.level}: ${String(w.msg)}${(w.err as { message?: string } | undefined)?.message ? ` (${(w.err as { message: string }).message})` : ""}`;
      kinds.set(k, (kinds.get(k) ?? 0) + 1);
    }
    console.log(`\nThe service logged ${serviceWarnings.length} warnings or errors:`);
    for (const [k, n] of kinds) console.log(`  ${n} × ${k.slice(0, 300)}`);
  } else console.log("\nThe service logged no warnings or errors during the run.");
  const failed = lanes.filter((l) => failures(l) > 0);
  if (failed.length) console.log(`Lanes with failed requests: ${failed.map((l) => `${l.name} (${failures(l)}: ${l.firstError ?? "skipped or timed out"})`).join("; ")}`);
  console.log(`\nbench: finished in ${((Date.now() - started.getTime()) / 1000).toFixed(0)} s`);
  if (process.env.BENCH_JSON) {
    writeFileSync(process.env.BENCH_JSON, JSON.stringify({ machine: { ...machine, busyBefore, loadavg }, lanes, rows, crossover, traceSizes, serviceWarnings }, null, 2));
    console.log(`bench: figures written to ${process.env.BENCH_JSON}`);
  }
}

function printCrossover(c: CrossoverResult): void {
  console.log(`\nScoring inline vs pool (explain ${c.explain}; event-loop ms per task; the pool wins where its loop time < inline)\n`);
  console.log("| trees | candidates | tree walks | inline ms | pool round trip ms | pool event-loop ms | pool saves the loop |");
  console.log("|---|---|---|---|---|---|---|");
  for (const p of c.points) {
    console.log(`| ${p.trees} | ${p.candidates} | ${p.walks} | ${fmt(p.inlineMs, 3)} | ${fmt(p.poolRoundTripMs, 3)} | ${fmt(p.poolLoopMs, 3)} | ${p.poolLoopMs < p.inlineMs ? "yes" : "no"} |`);
  }
  console.log(
    `\nModel compile per task (scoreCandidates compiles the ensemble on every call): ${Object.entries(c.compileMsByTrees)
      .map(([t, ms]) => `${t} trees ${fmt(ms, 3)} ms (${Math.round(c.jsonBytesByTrees[Number(t)] / 1024)} KiB JSON)`)
      .join(", ")}`,
  );
  console.log(
    `Crossover: ${c.crossoverWalks === null ? "the pool saved the event loop at none of the measured points" : `from ${c.crossoverWalks} tree walks the pool costs the event loop less at every measured point`}; per candidate count ${JSON.stringify(c.crossoverByCandidates)}; the service's default threshold is ${c.defaultThreshold}.`,
  );
}

async function main(): Promise<number> {
  if (!process.env.TEST_DATABASE_URL || !process.env.TEST_REDIS_URL) {
    if (process.env.BENCH_SERVICES_STARTED) throw new Error("test/services.sh did not export TEST_DATABASE_URL and TEST_REDIS_URL");
    return reexecWithServices();
  }
  let interrupted = false;
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      console.error(`\nbench: ${signal}: stopping what was started`);
      expectExits();
      cleanup().finally(() => process.exit(130));
    });
  }
  try {
    await run();
    return 0;
  } catch (err) {
    console.error("bench failed:", err);
    return 1;
  } finally {
    await cleanup();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

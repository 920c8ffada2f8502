/**
 * The cost of OpenTelemetry tracing (issue 24, section 4): Recommend throughput with tracing on, at
 * the default sampler (parentbased_always_on: every request is recorded and exported), against
 * tracing off. Target: on within 10% of off.
 *
 *   source test/services.sh && node --import tsx bench/tracing.ts
 *   (or with TEST_DATABASE_URL and TEST_REDIS_URL already set)
 *
 * Two services run side by side as `node src/main.ts` (with `npm start`'s node options and
 * bench/probe.mjs) on the same database and Redis, one with tracing off and one with it on, and the
 * load alternates between them in short windows (which goes first alternates too). On a machine
 * shared with other work, load that comes and goes then falls on both alike, where one long lane
 * each would measure the neighbours. With tracing on, spans go over OTLP/HTTP (protobuf, the SDK's
 * default) to a sink in this process that reads and acknowledges them, so the export is paid for as
 * it would be towards a collector. Load: a closed loop of gRPC Recommend calls (200 active offers,
 * the default flow, 2,000 customers). The figures are medians over the windows, and the median of
 * the on/off ratio of each pair of windows.
 *
 * Both services are first warmed up for 10 s each (the JIT, caches and pools of a fresh process).
 * Knobs: BENCH_LANE_SECONDS (window length, 3), BENCH_WARMUP_SECONDS (before each window, 1),
 * BENCH_CONCURRENCY (16), BENCH_TRACING_PAIRS (pairs of windows, 10), BENCH_JSON (a path to write
 * the figures to), BENCH_OTEL_SAMPLER (OTEL_TRACES_SAMPLER of the traced service, to tell recording
 * and export from what every request pays once the SDK runs: `always_off`).
 */
import { createServer } from "node:http";
import { once } from "node:events";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { availableParallelism, cpus, loadavg } from "node:os";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { DecisionService, RecommendRequestSchema } from "../gen/decisioning/v1/decisions_pb.js";
import { closedLoop, failures, median, warmUp, type LaneResult } from "./load.js";
import { BENCH_SECRETS, SERVICE_NODE_OPTIONS, createBenchTenant, createDatabase, deleteRedisPrefix, envPositive, expectExits, spawnProbed, stockTenant, type ProbedProcess } from "./stack.js";
import { customers } from "./workload.js";

const LANE_MS = envPositive("BENCH_LANE_SECONDS", 3) * 1000;
const WARM_MS = envPositive("BENCH_WARMUP_SECONDS", 1) * 1000;
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_CONCURRENCY) || 16);
const PAIRS = Math.max(1, Number(process.env.BENCH_TRACING_PAIRS) || 10);
const OFFERS = 200;
const INITIAL_WARM_MS = 10_000;

type Mode = "off" | "on";

interface Window {
  tracing: Mode;
  lane: LaneResult;
  serverCpuMsPerRequest: number;
}

/** An OTLP/HTTP receiver that reads every export and answers it with an empty ExportTraceServiceResponse. */
async function startSink() {
  const stats = { exports: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (stats.bytes += chunk.length));
    req.on("end", () => {
      stats.exports++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats, close: () => new Promise<void>((r) => server.close(() => r())) };
}

async function main(): Promise<void> {
  const dbBase = process.env.TEST_DATABASE_URL;
  const redisUrl = process.env.TEST_REDIS_URL;
  if (!dbBase || !redisUrl) throw new Error("set TEST_DATABASE_URL and TEST_REDIS_URL (source test/services.sh)");
  console.log(`bench tracing: ${new Date().toISOString()}, ${availableParallelism()} CPUs (${cpus()[0]?.model}), node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  console.log(`bench tracing: ${PAIRS} pairs of windows (off and on, alternating), ${LANE_MS / 1000} s each after ${WARM_MS / 1000} s of warm-up, ${CONCURRENCY} in flight`);

  const closers: Array<() => Promise<unknown>> = [];
  const cleanup = async () => {
    expectExits();
    for (const close of closers.reverse()) await close().catch((err) => console.error(`bench tracing: cleanup: ${(err as Error).message}`));
  };
  process.once("SIGINT", () => void cleanup().then(() => process.exit(130)));
  try {
    const db = await createDatabase(dbBase);
    closers.push(() => db.drop());
    const redisKeyPrefix = `bench:${randomBytes(6).toString("hex")}:`;
    closers.push(() => deleteRedisPrefix(redisUrl, redisKeyPrefix));
    const env = { DATABASE_URL: db.url, REDIS_URL: redisUrl, REDIS_KEY_PREFIX: redisKeyPrefix, ...BENCH_SECRETS };
    const tenant = await createBenchTenant(env, "bench");
    const sink = await startSink();
    closers.push(() => sink.close());

    const services = {} as Record<Mode, ProbedProcess>;
    for (const tracing of ["off", "on"] as const) {
      const otel: Record<string, string> = tracing === "on" ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {};
      if (tracing === "on" && process.env.BENCH_OTEL_SAMPLER) otel.OTEL_TRACES_SAMPLER = process.env.BENCH_OTEL_SAMPLER;
      const service = await spawnProbed(
        "src/main.ts",
        { ...env, ...otel, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "info" },
        `the service (tracing ${tracing})`,
        SERVICE_NODE_OPTIONS,
      );
      closers.push(() => service.stop());
      services[tracing] = service;
    }
    const baseUrl = `http://127.0.0.1:${services.off.ports.httpPort}`;
    const headers = { "x-api-key": await stockTenant(baseUrl, tenant.apiKey, OFFERS) };
    const requests = customers(2_000).map((p) => create(RecommendRequestSchema, { customerId: p.customerId, attributes: p.attributes, context: p.context }));
    const calls = Object.fromEntries(
      (["off", "on"] as const).map((mode) => {
        const client = createClient(DecisionService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${services[mode].ports.grpcPort}` }));
        return [mode, (i: number) => client.recommend(requests[i % requests.length], { headers, timeoutMs: 10_000 })];
      }),
    ) as Record<Mode, (i: number) => Promise<unknown>>;

    for (const mode of ["off", "on"] as const) await warmUp(calls[mode], INITIAL_WARM_MS, CONCURRENCY);
    const windows: Window[] = [];
    const sent = { ...sink.stats };
    for (let pair = 0; pair < PAIRS; pair++) {
      for (const tracing of pair % 2 === 0 ? (["off", "on"] as const) : (["on", "off"] as const)) {
        await warmUp(calls[tracing], WARM_MS, CONCURRENCY);
        await services[tracing].probe.reset();
        const lane = await closedLoop(calls[tracing], { concurrency: CONCURRENCY, durationMs: LANE_MS });
        const report = await services[tracing].probe.report();
        windows.push({ tracing, lane, serverCpuMsPerRequest: report.cpuMs / Math.max(1, lane.ok) });
        console.log(
          `  pair ${String(pair + 1).padStart(2)} tracing ${tracing.padEnd(3)} ${lane.throughput.toFixed(0).padStart(6)} req/s  p50 ${lane.latency.p50.toFixed(2)}  p99 ${lane.latency.p99.toFixed(2)} ms` +
            `  server CPU ${(report.cpuMs / Math.max(1, lane.ok)).toFixed(3)} ms/req  fail ${failures(lane)}` +
            (lane.firstError ? `  first error: ${lane.firstError}` : ""),
        );
      }
    }
    const of = (t: Mode, f: (w: Window) => number) => windows.filter((w) => w.tracing === t).map(f);
    const off = median(of("off", (w) => w.lane.throughput));
    const on = median(of("on", (w) => w.lane.throughput));
    const onWindows = of("on", (w) => w.lane.throughput);
    const pairRatio = median(of("off", (w) => w.lane.throughput).map((x, i) => onWindows[i] / x));
    const change = (pairRatio - 1) * 100;
    const cpu = (t: Mode) => median(of(t, (w) => w.serverCpuMsPerRequest));
    const exported = { exports: sink.stats.exports - sent.exports, kib: (sink.stats.bytes - sent.bytes) / 1024 };
    const onRequests = windows.filter((w) => w.tracing === "on").reduce((n, w) => n + w.lane.ok, 0);
    console.log(
      `bench tracing: median throughput off ${off.toFixed(0)} req/s, on ${on.toFixed(0)} req/s; median on/off per pair ${change.toFixed(1)}%; ` +
        `median server CPU ${cpu("off").toFixed(3)} -> ${cpu("on").toFixed(3)} ms/req; OTLP ${exported.exports} exports, ${exported.kib.toFixed(0)} KiB ` +
        `(${((exported.kib * 1024) / Math.max(1, onRequests)).toFixed(0)} B per traced request); target within 10%: ${change >= -10 ? "met" : "MISSED"}`,
    );
    if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ windows, off, on, changePercent: change, exported }, null, 2));
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

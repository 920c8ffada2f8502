/**
 * The cost of OpenTelemetry tracing (issue 24, section 4): Recommend throughput with tracing on, at
 * the default sampler (parentbased_always_on: every request is recorded and exported), against
 * tracing off. Target: on within 10% of off.
 *
 *   source test/services.sh && node --import tsx bench/tracing.ts
 *   (or with TEST_DATABASE_URL and TEST_REDIS_URL already set)
 *
 * The service runs as `node src/main.ts` (with `npm start`'s node options and bench/probe.mjs), once
 * per round, alternating off and on so that drift of a shared machine falls on both alike. With
 * tracing on, spans go over OTLP/HTTP (protobuf, the SDK's default) to a sink in this process that
 * reads and acknowledges them, so the export is paid for as it would be towards a collector.
 * Load: a closed loop of gRPC Recommend calls (200 active offers, the default flow, 2,000 customers).
 *
 * Knobs: BENCH_LANE_SECONDS (10), BENCH_WARMUP_SECONDS (3), BENCH_CONCURRENCY (16),
 * BENCH_TRACING_PAIRS (rounds of off then on, 2), BENCH_JSON (a path to write the figures to),
 * BENCH_OTEL_SAMPLER (OTEL_TRACES_SAMPLER of the "on" rounds, to tell recording and export from the
 * context propagation and instrumentation every request pays: `always_off`).
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
import { closedLoop, failures, warmUp, type LaneResult } from "./load.js";
import { BENCH_SECRETS, SERVICE_NODE_OPTIONS, createDatabase, deleteRedisPrefix, expectExits, restOk, runCli, spawnProbed } from "./stack.js";
import { customers, offerBody } from "./workload.js";

const seconds = (name: string, fallback: number) => (Number(process.env[name]) > 0 ? Number(process.env[name]) : fallback) * 1000;
const LANE_MS = seconds("BENCH_LANE_SECONDS", 10);
const WARM_MS = seconds("BENCH_WARMUP_SECONDS", 3);
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_CONCURRENCY) || 16);
const PAIRS = Math.max(1, Number(process.env.BENCH_TRACING_PAIRS) || 2);
const OFFERS = 200;

interface Round {
  tracing: "off" | "on";
  lane: LaneResult;
  serverCpuMsPerRequest: number;
  /** OTLP export requests and bytes the sink received during the round. */
  exports: number;
  exportedBytes: number;
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
  console.log(`bench tracing: ${PAIRS} pairs of rounds (off, on), ${LANE_MS / 1000} s each after ${WARM_MS / 1000} s of warm-up, ${CONCURRENCY} in flight`);

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
    const tenant = (await runCli(["tenant", "create", "--name", "bench"], { ...env, LOG_LEVEL: "warn" })) as { tenantId: string; apiKey: string };
    const limits = { default: { limit: 100_000_000, windowSeconds: 60 }, offers: { limit: 100_000_000, windowSeconds: 60 } };
    await runCli(["tenant", "set-limits", "--tenant", tenant.tenantId, "--limits", JSON.stringify(limits)], { ...env, LOG_LEVEL: "warn" });
    const sink = await startSink();
    closers.push(() => sink.close());

    const requests = customers(2_000).map((p) => create(RecommendRequestSchema, { customerId: p.customerId, attributes: p.attributes, context: p.context }));
    let dataKey = "";
    const rounds: Round[] = [];
    for (let r = 0; r < PAIRS * 2; r++) {
      const tracing = r % 2 === 0 ? "off" : "on";
      const otel: Record<string, string> = tracing === "on" ? { OTEL_EXPORTER_OTLP_ENDPOINT: sink.url } : {};
      if (tracing === "on" && process.env.BENCH_OTEL_SAMPLER) otel.OTEL_TRACES_SAMPLER = process.env.BENCH_OTEL_SAMPLER;
      const service = await spawnProbed(
        "src/main.ts",
        { ...env, ...otel, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "info" },
        `the service (tracing ${tracing})`,
        SERVICE_NODE_OPTIONS,
      );
      try {
        const baseUrl = `http://127.0.0.1:${service.ports.httpPort}`;
        if (!dataKey) {
          for (let i = 0; i < OFFERS; i += 10) {
            await Promise.all(Array.from({ length: 10 }, (_, j) => restOk(baseUrl, "POST", "/api/v1/offers", tenant.apiKey, offerBody(i + j), 201)));
          }
          dataKey = (await restOk(baseUrl, "POST", "/api/v1/api-keys", tenant.apiKey, { name: "bench" }, 201)).key;
        }
        const client = createClient(DecisionService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${service.ports.grpcPort}` }));
        const headers = { "x-api-key": dataKey };
        const call = (i: number) => client.recommend(requests[i % requests.length], { headers, timeoutMs: 10_000 });
        await warmUp(call, WARM_MS, CONCURRENCY);
        await service.probe.reset();
        const sent = { ...sink.stats };
        const lane = await closedLoop(call, { concurrency: CONCURRENCY, durationMs: LANE_MS });
        const report = await service.probe.report();
        const round: Round = {
          tracing,
          lane,
          serverCpuMsPerRequest: report.cpuMs / Math.max(1, lane.ok),
          exports: sink.stats.exports - sent.exports,
          exportedBytes: sink.stats.bytes - sent.bytes,
        };
        rounds.push(round);
        console.log(
          `  round ${r + 1} tracing ${tracing.padEnd(3)} ${lane.throughput.toFixed(0).padStart(6)} req/s  p50 ${lane.latency.p50.toFixed(2)}  p99 ${lane.latency.p99.toFixed(2)} ms` +
            `  server CPU ${round.serverCpuMsPerRequest.toFixed(3)} ms/req  fail ${failures(lane)}  OTLP exports ${round.exports} (${(round.exportedBytes / 1024).toFixed(0)} KiB)`,
        );
        if (lane.firstError) console.log(`    first error: ${lane.firstError}`);
      } finally {
        await service.stop();
      }
    }
    const mean = (t: "off" | "on", f: (r: Round) => number) => {
      const xs = rounds.filter((r) => r.tracing === t).map(f);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    };
    const off = mean("off", (r) => r.lane.throughput);
    const on = mean("on", (r) => r.lane.throughput);
    const change = (on / off - 1) * 100;
    console.log(
      `bench tracing: off ${off.toFixed(0)} req/s, on ${on.toFixed(0)} req/s: ${change.toFixed(1)}% ` +
        `(server CPU ${mean("off", (r) => r.serverCpuMsPerRequest).toFixed(3)} -> ${mean("on", (r) => r.serverCpuMsPerRequest).toFixed(3)} ms/req); ` +
        `target: within 10%: ${change >= -10 ? "met" : "MISSED"}`,
    );
    if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ rounds, off, on, changePercent: change }, null, 2));
  } finally {
    await cleanup();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * `npm run bench:side-by-side -- <git revision>`: this checkout's gRPC Recommend against another
 * revision's, both running at once (issue 18, eighteenth session).
 *
 * On a shared host the minute-to-minute drift is larger than most single changes, so two runs of
 * `npm run bench` a few minutes apart cannot compare builds. Here both builds run at the same
 * time: each is a service process of its own (one process, WORKERS=1) with a database and Redis
 * prefix of its own, 200 active offers and the bench's customer, and h2load drives them in turn
 * with the bench's closed loop (4 connections × 8 streams) in short slices, the order alternating
 * each round. It prints each slice and the mean throughput, the service CPU per Recommend and the
 * ratios of the two. The other revision is checked out into a temporary git worktree (sharing
 * this checkout's node_modules and bench/probe.mjs; its service runs from this checkout's
 * directory) and removed afterwards.
 *
 * Knobs: BENCH_SLICE_SECONDS (6), BENCH_ROUNDS (8). Without TEST_DATABASE_URL and TEST_REDIS_URL
 * it re-runs itself under test/services.sh, as `npm run bench` does.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { toBinary } from "@bufbuild/protobuf";
import { RecommendRequestSchema } from "../gen/decisioning/v1/decisions_pb.js";
import { grpcFrame, h2loadClosed, requireH2load, type H2loadTarget } from "./h2load.js";
import { median } from "./load.js";
import * as stack from "./stack.js";
import { benchRecommendRequest } from "./workload.js";

const OFFERS = 200;
const CLOSED = { connections: 4, streams: 8 };
const SLICE_S = stack.envPositive("BENCH_SLICE_SECONDS", 6);
const ROUNDS = Math.round(stack.envPositive("BENCH_ROUNDS", 8));

interface Side {
  name: string;
  db: stack.BenchDatabase;
  prefix: string;
  /** Set once the side's service has started and been stocked. */
  service?: stack.ProbedProcess;
  target?: H2loadTarget;
  rates: number[];
  cpuMs: number[];
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** A service of the checkout at `root`, with its own database, prefix, tenant and 200 offers. */
async function startSide(name: string, root: string, sides: Side[]): Promise<void> {
  const db = await stack.createDatabase(process.env.TEST_DATABASE_URL!);
  const prefix = `bench-sbs:${randomBytes(4).toString("hex")}:`;
  const side: Side = { name, db, prefix, rates: [], cpuMs: [] };
  sides.push(side);
  const env = { DATABASE_URL: db.url, REDIS_URL: process.env.TEST_REDIS_URL!, REDIS_KEY_PREFIX: prefix, ...stack.BENCH_SECRETS };
  const tenant = await stack.createBenchTenant(env, `bench-${name}`);
  const serviceEnv = { ...env, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "info", WORKERS: "1" };
  const service = await stack.spawnProbed(join(root, "src/main.ts"), serviceEnv, `service (${name})`, stack.SERVICE_NODE_OPTIONS);
  side.service = service;
  const key = await stack.stockTenant(`http://127.0.0.1:${service.ports.httpPort}`, tenant.apiKey, OFFERS);
  side.target = {
    url: `http://127.0.0.1:${service.ports.grpcPort}/decisioning.v1.DecisionService/Recommend`,
    headers: { "content-type": "application/grpc", te: "trailers", "x-api-key": key },
    body: grpcFrame(toBinary(RecommendRequestSchema, benchRecommendRequest())),
  };
}

async function measure(sides: Side[]): Promise<void> {
  for (const side of sides) await h2loadClosed(side.target!, { ...CLOSED, seconds: 5 });
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) {
      // The other side's trace writes of the slice before settle first.
      await sleep(1500);
      await side.service!.probe.reset();
      const lane = await h2loadClosed(side.target!, { ...CLOSED, seconds: SLICE_S });
      const probe = await side.service!.probe.report();
      if (lane.errors) throw new Error(`${side.name}: ${lane.errors} failed requests (${lane.firstError})`);
      side.rates.push((lane.ok / lane.durationMs) * 1000);
      side.cpuMs.push(probe.cpuMs / lane.ok);
    }
    const [a, b] = sides;
    console.log(
      `round ${round + 1}: ${a.name} ${a.rates[round].toFixed(0)}/s ${a.cpuMs[round].toFixed(3)} ms | ${b.name} ${b.rates[round].toFixed(0)}/s ${b.cpuMs[round].toFixed(3)} ms | ratio ${(a.rates[round] / b.rates[round]).toFixed(3)}`,
    );
  }
  const [a, b] = sides;
  const ratios = a.rates.map((rate, i) => rate / b.rates[i]);
  console.log(`\n| build | Recommends/s (mean of ${ROUNDS} slices of ${SLICE_S} s) | service CPU per Recommend |`);
  console.log("|---|---|---|");
  console.log(`| ${b.name} | ${mean(b.rates).toFixed(0)} | ${mean(b.cpuMs).toFixed(3)} ms |`);
  console.log(
    `| ${a.name} | ${mean(a.rates).toFixed(0)} (${(mean(a.rates) / mean(b.rates)).toFixed(3)} ×; median of the slice ratios ${median(ratios).toFixed(3)}) | ${mean(a.cpuMs).toFixed(3)} ms (${(mean(a.cpuMs) / mean(b.cpuMs)).toFixed(3)} ×) |`,
  );
}

async function main(): Promise<number> {
  const revision = process.argv[2];
  if (!revision) {
    console.error("usage: npm run bench:side-by-side -- <git revision to compare this checkout with>");
    return 2;
  }
  requireH2load();
  if (!process.env.TEST_DATABASE_URL || !process.env.TEST_REDIS_URL) {
    if (process.env.BENCH_SERVICES_STARTED) throw new Error("test/services.sh did not export TEST_DATABASE_URL and TEST_REDIS_URL");
    return stack.reexecWithServices("bench/side-by-side.ts");
  }
  const worktree = join(mkdtempSync(join(tmpdir(), "bench-sbs-")), "checkout");
  const git = (...args: string[]) => execFileSync("git", args, { cwd: stack.ROOT, stdio: ["ignore", "pipe", "inherit"] }).toString().trim();
  const sides: Side[] = [];
  let checkedOut = false;
  try {
    const commit = git("rev-parse", "--short", `${revision}^{commit}`);
    git("worktree", "add", "--detach", worktree, commit);
    checkedOut = true;
    symlinkSync(join(stack.ROOT, "node_modules"), join(worktree, "node_modules"));
    console.log(`side by side: this checkout (${git("rev-parse", "--short", "HEAD")}) against ${commit}, ${ROUNDS} rounds of ${SLICE_S} s`);
    await startSide("this checkout", stack.ROOT, sides);
    await startSide(commit, worktree, sides);
    await measure(sides);
    return 0;
  } catch (err) {
    console.error("side by side failed:", err);
    return 1;
  } finally {
    stack.expectExits();
    for (const side of sides) {
      await side.service?.stop();
      await side.db.drop();
      await stack.deleteRedisPrefix(process.env.TEST_REDIS_URL!, side.prefix);
    }
    if (checkedOut) git("worktree", "remove", "--force", worktree);
    rmSync(join(worktree, ".."), { recursive: true, force: true });
  }
}

process.exitCode = await main();

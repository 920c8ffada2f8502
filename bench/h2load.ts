/**
 * Load from h2load (Debian's nghttp2-client, a C HTTP/2 client): closed loop for throughput, open
 * loop at a fixed rate (`--rps`) with `--log-file` for every request's time. The client costs a
 * small fraction of the server's CPU per call, so a baseline driven by it measures the server,
 * not the client (issue 18: the Node gRPC client cost about 0.17 ms per call on these two cores).
 *
 * h2load sends one body for every request of a run; lanes whose requests must differ (fresh
 * idempotency keys) use bench/h2-frames.ts instead.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LaneResult, LatencySummary } from "./load.js";

/** The install line a missing h2load is reported with (.ci/run installs it the same way). */
export const H2LOAD_INSTALL = "apt-get install -y nghttp2-client";

/** h2load's version, or an error naming the install line: a missing tool never skips a lane. */
export function requireH2load(): string {
  const probe = spawnSync("h2load", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new Error(`h2load (Debian package nghttp2-client) is not installed; install it with: ${H2LOAD_INSTALL}`);
  }
  return probe.stdout.trim().split(/\s+/)[1] ?? "unknown";
}

/** A protobuf message in gRPC's length-prefixed frame (uncompressed). */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

export interface H2loadTarget {
  url: string;
  headers: Record<string, string>;
  body: Uint8Array | string;
}

export interface H2loadResult extends LaneResult {
  /** h2load's own CPU time per completed request, ms (user + system, from the shell's `times`). */
  clientCpuMsPerRequest: number;
}

const dir = mkdtempSync(join(tmpdir(), "bench-h2load-"));
process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/**
 * Runs h2load under bash so the shell's `times` reports the child's CPU (h2load has no such
 * figure of its own). Resolves with h2load's stdout and its CPU time in ms.
 */
function h2load(args: string[]): Promise<{ out: string; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", 'h2load "$@"; rc=$?; times >&2; exit $rc', "h2load", ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (err += c));
    child.on("error", reject);
    child.on("close", (code) => {
      // `times`: the shell's user and system time, then its children's ("0m1.234s 0m0.567s").
      const lines = err.trim().split("\n");
      const children = lines[lines.length - 1]?.match(/(\d+)m([\d.]+)s\s+(\d+)m([\d.]+)s/);
      if (code !== 0 || !children) return reject(new Error(`h2load ${args.join(" ")} exited with ${code}: ${(out + err).slice(-500)}`));
      const cpuMs = (Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4])) * 1000;
      resolve({ out, cpuMs });
    });
  });
}

function targetArgs(t: H2loadTarget): string[] {
  const file = join(dir, `body-${++files}`);
  writeFileSync(file, t.body);
  return ["-d", file, ...Object.entries(t.headers).flatMap(([k, v]) => ["-H", `${k}: ${v}`]), t.url];
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);

function summarize(ms: number[]): LatencySummary {
  const s = ms.sort((a, b) => a - b);
  return {
    p50: percentile(s, 0.5),
    p90: percentile(s, 0.9),
    p99: percentile(s, 0.99),
    p999: percentile(s, 0.999),
    max: s.length ? s[s.length - 1] : NaN,
    mean: s.length ? s.reduce((a, b) => a + b, 0) / s.length : NaN,
    count: s.length,
  };
}

/** "finished in 10.00s, 1234.50 req/s", "requests: … succeeded, … failed, … errored" and the 2xx count. */
function parseSummary(out: string) {
  const num = (re: RegExp) => Number(out.match(re)?.[1] ?? NaN);
  return {
    throughput: num(/finished in [^,]+, ([\d.]+) req\/s/),
    succeeded: num(/(\d+) succeeded/),
    failed: num(/(\d+) failed/),
    errored: num(/(\d+) errored/),
    ok2xx: num(/status codes: (\d+) 2xx/),
  };
}

/**
 * Closed loop: `connections` × `streams` requests in flight for `seconds`. Latency is h2load's
 * own per-request time of the same run (from --log-file), from send to the end of the response.
 */
export async function h2loadClosed(t: H2loadTarget, o: { connections: number; streams: number; seconds: number }): Promise<H2loadResult> {
  const log = join(dir, `log-${++files}.tsv`);
  const { out, cpuMs } = await h2load(["-c", String(o.connections), "-m", String(o.streams), "-D", String(o.seconds), `--log-file=${log}`, ...targetArgs(t)]);
  return result("closed", null, o.connections * o.streams, o.seconds, out, log, cpuMs);
}

/**
 * Open loop: `rate` requests per second over `connections` connections (h2load's --rps is per
 * connection), at most `streams` in flight on each. A request due while a connection has `streams`
 * outstanding waits for a free stream, so past saturation the offered rate falls instead of the
 * latency growing without bound; the lane reports the rate it reached next to the one it offered.
 */
export async function h2loadOpen(t: H2loadTarget, o: { rate: number; connections: number; streams: number; seconds: number }): Promise<H2loadResult> {
  const log = join(dir, `log-${++files}.tsv`);
  const perConnection = Math.max(1, Math.round(o.rate / o.connections));
  const { out, cpuMs } = await h2load([
    "-c", String(o.connections), "-m", String(o.streams), "--rps", String(perConnection), "-D", String(o.seconds), `--log-file=${log}`, ...targetArgs(t),
  ]);
  return result("open", perConnection * o.connections, null, o.seconds, out, log, cpuMs);
}

function result(mode: "open" | "closed", rate: number | null, concurrency: number | null, seconds: number, out: string, log: string, cpuMs: number): H2loadResult {
  const s = parseSummary(out);
  const ok: number[] = [];
  let bad = 0;
  for (const line of readFileSync(log, "utf8").split("\n")) {
    if (!line) continue;
    const [, status, us] = line.split("\t");
    if (status === "200") ok.push(Number(us) / 1000);
    else bad++;
  }
  rmSync(log, { force: true });
  return {
    mode,
    targetRate: rate,
    concurrency,
    durationMs: seconds * 1000,
    ok: ok.length,
    errors: bad + (Number.isFinite(s.errored) ? s.errored : 0),
    skipped: 0,
    timedOut: 0,
    firstError: bad ? `${bad} responses other than HTTP 200` : null,
    throughput: ok.length / seconds,
    latency: summarize(ok),
    clientEventLoopP99Ms: NaN,
    clientCpuMsPerRequest: cpuMs / Math.max(1, ok.length),
  };
}

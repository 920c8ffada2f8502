/**
 * What the benchmark starts and stops: a fresh database on the given PostgreSQL, a Redis key prefix
 * of its own, the service as a separate `node src/main.ts` process (with bench/probe.mjs preloaded),
 * the echo baseline server, and the bootstrap CLI. Everything listens on loopback only.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { once } from "node:events";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";
import pg from "pg";
import { Redis } from "ioredis";
import { offerBody } from "./workload.js";

export const ROOT = join(import.meta.dirname, "..");
const PROBE = pathToFileURL(join(ROOT, "bench/probe.mjs")).href;

/**
 * The node options `npm start` gives the service (package.json's start script), so the benchmark
 * measures the service as it is run, not as a bare `node` would run it.
 */
export const SERVICE_NODE_OPTIONS: string[] = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts.start as string)
  .split(/\s+/)
  .filter((arg) => arg.startsWith("--"));

/** What bench/probe.mjs reports from inside a server process for one measurement window. */
export interface ProbeReport {
  /** Event-loop delay over the window, in ms, with the 10 ms sampling interval taken off. */
  eventLoopDelay: { p50: number; p99: number; p999: number; max: number; samples: number };
  /** Share of wall time the event loop was busy (0..1). */
  eventLoopUtilization: number;
  /** CPU time of the whole process (main thread and worker threads), ms. */
  cpuMs: number;
  wallMs: number;
}

let shuttingDown = false;
/** From now on a child process exiting is expected (the benchmark was interrupted): say nothing. */
export function expectExits(): void {
  shuttingDown = true;
}

/** Secrets of the benchmark's own service process (>= 32 bytes each, random per run). */
export const BENCH_SECRETS = {
  API_KEY_PEPPER: randomBytes(32).toString("hex"),
  JWT_SIGNING_SECRET: randomBytes(32).toString("hex"),
};

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

async function admin<T>(baseUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: baseUrl });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

export interface BenchDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** An empty database of this run (the service and the CLI migrate it); dropped at the end. */
export async function createDatabase(baseUrl: string): Promise<BenchDatabase> {
  const name = `bench_${randomBytes(6).toString("hex")}`;
  await admin(baseUrl, (c) => c.query(`CREATE DATABASE ${name}`));
  let dropped = false;
  return {
    url: withDatabase(baseUrl, name),
    name,
    async drop() {
      if (dropped) return;
      dropped = true;
      await admin(baseUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** Deletes every key under the run's prefix (the service's keys and the baselines'). */
export async function deleteRedisPrefix(url: string, prefix: string): Promise<number> {
  const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  let deleted = 0;
  try {
    let cursor = "0";
    do {
      const [next, keys] = await r.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = next;
      if (keys.length) deleted += await r.del(...keys);
    } while (cursor !== "0");
  } finally {
    r.disconnect();
  }
  return deleted;
}

/** `npm run --silent cli -- <args>`: its one JSON line, or an error with its stderr. */
export async function runCli(args: string[], env: Record<string, string>): Promise<any> {
  const child = spawn("npm", ["run", "--silent", "cli", "--", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c) => (stdout += c));
  child.stderr!.on("data", (c) => (stderr += c));
  const [code] = await once(child, "close");
  if (code !== 0) throw new Error(`cli ${args.join(" ")} exited with ${code}: ${stderr.trim()}`);
  const line = stdout.trim().split("\n").pop()!;
  return JSON.parse(line);
}

/** A child server with bench/probe.mjs preloaded: its ports, its probe, its stop. */
export interface ProbedProcess {
  child: ChildProcess;
  ports: { httpPort?: number; grpcPort: number };
  /** JSON log lines at warn level or above, kept for the report. */
  warnings: Array<Record<string, unknown>>;
  probe: { reset(): Promise<void>; report(): Promise<ProbeReport> };
  stop(): Promise<number | null>;
}

/**
 * Spawns `node --import tsx --import bench/probe.mjs <script>` and waits for the JSON stdout lines
 * that name its gRPC port (the service's start-up log line, or the echo server's): one per service
 * process when `env.WORKERS` runs several.
 */
export async function spawnProbed(script: string, env: Record<string, string>, what: string, nodeArgs: string[] = []): Promise<ProbedProcess> {
  let waitingFor = Math.max(1, Number(env.WORKERS) || 1);
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "--import", PROBE, script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/tmp", ...env },
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const exited = once(child, "exit").then(([code]) => code as number | null);
  const warnings: ProbedProcess["warnings"] = [];
  const tail: string[] = [];
  const ports = await new Promise<ProbedProcess["ports"]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 60 s`)), 60_000);
    exited.then((code) => reject(new Error(`${what} exited with ${code ?? child.signalCode} before listening`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      tail.push(line);
      if (tail.length > 5) tail.shift();
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (typeof entry.level === "number" && entry.level >= 40) warnings.push(entry);
      if (typeof entry.grpcPort === "number" && entry.grpcPort > 0 && --waitingFor === 0) {
        clearTimeout(timer);
        resolve({ httpPort: entry.httpPort as number | undefined, grpcPort: entry.grpcPort });
      }
    });
  });
  let stopRequested = false;
  exited.then((code) => {
    if (!stopRequested && !shuttingDown) {
      console.error(`bench: ${what} (pid ${child.pid}) exited unexpectedly with ${code ?? child.signalCode}; its last output:`);
      for (const line of tail) console.error(`  | ${line.slice(0, 500)}`);
    }
  });
  let seq = 0;
  const pending = new Map<number, (m: any) => void>();
  child.on("message", (m: any) => {
    pending.get(m?.id)?.(m);
    pending.delete(m?.id);
  });
  const ask = (cmd: string) =>
    new Promise<any>((resolve, reject) => {
      if (child.exitCode !== null || child.signalCode !== null) return reject(new Error(`${what} is not running (exit ${child.exitCode ?? child.signalCode})`));
      const id = ++seq;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${what} probe did not answer ${cmd}`));
      }, 5_000);
      pending.set(id, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
      child.send({ id, cmd });
    });
  let stopping: Promise<number | null> | null = null;
  return {
    child,
    ports,
    warnings,
    probe: {
      reset: async () => void (await ask("reset")),
      report: async () => (await ask("report")).report as ProbeReport,
    },
    stop() {
      stopRequested = true;
      stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        const code = await exited;
        clearTimeout(timer);
        return code;
      })();
      return stopping;
    },
  };
}

export interface RestResult {
  status: number;
  body: any;
}

/** A JSON REST call as an operator's script would make it. */
export async function rest(baseUrl: string, method: string, path: string, key: string, body?: unknown): Promise<RestResult> {
  const headers: Record<string, string> = { "x-api-key": key };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* keep the text */
  }
  return { status: res.status, body: parsed };
}

/** Like `rest`, but a status other than `expected` is an error naming the call. */
export async function restOk(baseUrl: string, method: string, path: string, key: string, body: unknown, expected: number): Promise<any> {
  const res = await rest(baseUrl, method, path, key, body);
  if (res.status !== expected) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
  return res.body;
}

/** A positive number from the environment, else `fallback`. */
export function envPositive(name: string, fallback: number): number {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** The bench tenant's rate limits, raised out of the bench's way. */
export const BENCH_TENANT_LIMITS = { default: { limit: 100_000_000, windowSeconds: 60 }, offers: { limit: 100_000_000, windowSeconds: 60 } };

/** A tenant made as an operator makes one (the CLI), with BENCH_TENANT_LIMITS; `env` names the database and Redis. */
export async function createBenchTenant(env: Record<string, string>, name: string): Promise<{ tenantId: string; apiKey: string }> {
  const created = (await runCli(["tenant", "create", "--name", name], { ...env, LOG_LEVEL: "warn" })) as { tenantId: string; apiKey: string };
  await runCli(["tenant", "set-limits", "--tenant", created.tenantId, "--limits", JSON.stringify(BENCH_TENANT_LIMITS)], { ...env, LOG_LEVEL: "warn" });
  return created;
}

/** `count` active offers (REST, ten at a time) and a data-plane key, with the tenant's admin key. */
export async function stockTenant(baseUrl: string, adminKey: string, count: number): Promise<string> {
  for (let i = 0; i < count; i += 10) {
    await Promise.all(Array.from({ length: Math.min(10, count - i) }, (_, j) => restOk(baseUrl, "POST", "/api/v1/offers", adminKey, offerBody(i + j), 201)));
  }
  return (await restOk(baseUrl, "POST", "/api/v1/api-keys", adminKey, { name: "bench" }, 201)).key as string;
}

/**
 * Runs `script` again under bash after sourcing test/services.sh, which starts a private
 * PostgreSQL and Redis on loopback and stops them from its EXIT trap; for a bench run without
 * TEST_DATABASE_URL and TEST_REDIS_URL. bash gets its own process group; our signals are passed on
 * to it as SIGINT, which the inner run handles by cleaning up and exiting, after which bash exits
 * and its trap runs.
 */
export function reexecWithServices(script: string): Promise<number> {
  const child = spawn("bash", ["-c", `source test/services.sh && node --import tsx ${script} "$@"`, "bench", ...process.argv.slice(2)], {
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

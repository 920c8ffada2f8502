import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "./logger.js";
import { embeddedLayout, EmbeddedPostgresError, type Account, type EmbeddedLayout } from "./embedded-postgres-layout.js";

export { EmbeddedPostgresError };

/** A free loopback port (for the embedded Postgres here; tests use it for private servers). */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => res(port));
    });
  });
}

export interface EmbeddedPostgres {
  url: string;
  /** This start created the cluster: the database is brand new. */
  created: boolean;
  /** Stops the server this process started; leaves alone one it only connected to. */
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Where what the postgres user cannot reach under the data directory goes, when run as root. */
  runtimeDir: string;
  /**
   * Connect to the server another process (npm start) runs on this data directory instead of
   * refusing: for the CLI. A second server must not, since its in-process caches would diverge.
   */
  shareRunning?: boolean;
}

interface Postmaster {
  pid: number;
  port: number;
  /** "starting", "ready" or "stopping". */
  status: string;
}

/** PostgreSQL's own lock file names the running server's pid, port and state; a stale one is ignored. */
function runningPostmaster(databaseDir: string): Postmaster | null {
  let lines: string[];
  try {
    lines = readFileSync(join(databaseDir, "postmaster.pid"), "utf8").split("\n");
  } catch {
    return null;
  }
  const pid = Number(lines[0]);
  // A stale file (its server gone) is ignored: Postgres cleans it up itself.
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return null;
  return { pid, port: Number(lines[3]), status: (lines[7] ?? "").trim() };
}

/**
 * The pid of the process that started the server on this data directory, beside it: a server whose
 * owner is gone was left by a SIGKILL (the exit hook that stops it never ran), and the next start
 * stops it instead of refusing. A server without this file (started by an older version) still
 * refuses, as one whose owner lives does.
 */
const OWNER_FILE = "pg.owner";
/** How long a left server may take to shut down before the start refuses after all. */
const ORPHAN_STOP_MS = 30_000;

function ownerOf(root: string): number | null {
  try {
    const pid = Number(readFileSync(join(root, OWNER_FILE), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== "ESRCH"; // EPERM: alive, someone else's
  }
}

/** A fast shutdown of a left server; true once its lock file is gone. */
async function stopOrphan(databaseDir: string, pid: number): Promise<boolean> {
  try {
    process.kill(pid, "SIGINT");
  } catch {
    return false;
  }
  for (const end = Date.now() + ORPHAN_STOP_MS; Date.now() < end; await sleep(50)) {
    if (runningPostmaster(databaseDir) === null) return true;
  }
  return false;
}

const urlFor = (password: string, port: number) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;

/** A program of the cluster, run as the layout's account. */
function spawnAs(program: string, args: string[], account: Account | null, cwd: string): ChildProcess {
  return spawn(program, args, {
    ...account,
    cwd,
    env: { ...process.env, LC_MESSAGES: "C" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group: a terminal's Ctrl-C must not stop it under a server that is draining.
    detached: true,
  });
}

function tail(output: string): string {
  return output.trim().split("\n").slice(-5).join(" | ");
}

async function initdb(layout: EmbeddedLayout, password: string): Promise<void> {
  // The password reaches initdb in a file only it (and root) can read, beside the cluster.
  const secretDir = mkdtempSync(join(dirname(layout.databaseDir), ".initdb-"));
  const pwfile = join(secretDir, "password");
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  if (layout.account) for (const p of [secretDir, pwfile]) chownSync(p, layout.account.uid, layout.account.gid);
  try {
    const child = spawnAs(
      layout.initdb,
      [
        `--pgdata=${layout.databaseDir}`,
        "--username=postgres",
        `--pwfile=${pwfile}`,
        "--auth=scram-sha-256",
        // UTF-8 and a collation that does not depend on the host's locales.
        "--encoding=UTF8",
        "--locale-provider=builtin",
        "--locale=C",
        "--builtin-locale=C.UTF-8",
      ],
      layout.account,
      dirname(layout.databaseDir),
    );
    let output = "";
    child.stdout!.on("data", (c) => (output += c));
    child.stderr!.on("data", (c) => (output += c));
    const [code] = await once(child, "close"); // rejects on "error": the program could not be run
    if (code !== 0) throw new EmbeddedPostgresError(`initdb failed for ${layout.databaseDir}: ${tail(output)}`);
  } finally {
    rmSync(secretDir, { recursive: true, force: true });
  }
}

/**
 * Starts the postmaster and resolves once its lock file says "ready". It is stopped by stop(), and
 * on any exit of this process (a crash included) by a signal sent from the exit hook; a SIGINT or
 * SIGTERM that nothing else handles yet (the CLI, a server still starting) ends this process first.
 */
async function startPostmaster(layout: EmbeddedLayout, port: number, logger: Logger): Promise<() => Promise<void>> {
  const child = spawnAs(layout.postgres, ["-D", layout.databaseDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1"], layout.account, dirname(layout.databaseDir));
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk).slice(-4000);
    logger.debug({ pg: String(chunk).trim() }, "embedded postgres");
  };
  child.stdout!.on("data", collect);
  child.stderr!.on("data", collect);
  const exited = new Promise<string>((res) => {
    child.once("error", (err) => res(err.message));
    child.once("exit", (code, signal) => res(`exited with ${signal ?? code}`));
  });
  const kill = () => void child.kill("SIGINT"); // fast shutdown
  const onSignal = (signal: NodeJS.Signals) => {
    if (process.listenerCount(signal) === 1) process.exit(signal === "SIGINT" ? 130 : 143);
  };
  process.on("exit", kill);
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const unhook = () => {
    process.off("exit", kill);
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };

  let ended: string | null = null;
  void exited.then((why) => (ended = why));
  for (;;) {
    const postmaster = runningPostmaster(layout.databaseDir);
    if (postmaster !== null && postmaster.pid === child.pid && postmaster.status === "ready") break;
    if (ended !== null) {
      unhook();
      throw new EmbeddedPostgresError(`the embedded PostgreSQL under ${layout.databaseDir} did not start (${ended}): ${tail(output)}`);
    }
    await sleep(50);
  }
  return async () => {
    if (ended === null) {
      kill();
      await exited;
    }
    unhook();
  };
}

/**
 * The single-node default when DATABASE_URL is unset: a real PostgreSQL, data kept under
 * <dataDir>/pg, listening on a free loopback port. One server owns a data directory; with
 * `shareRunning` the caller connects to the server already running there instead.
 */
export async function startEmbeddedPostgres(
  dataDir: string,
  password: string,
  logger: Logger,
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  const root = resolve(dataDir);
  mkdirSync(root, { recursive: true, mode: 0o755 });
  let running = runningPostmaster(join(root, "pg"));
  if (running && options.shareRunning) {
    logger.info({ pid: running.pid, port: running.port }, "using the embedded PostgreSQL that is running on this data directory");
    return { url: urlFor(password, running.port), created: false, stop: async () => {} };
  }
  const owner = ownerOf(root);
  // The owner being this very process means a pid reused after a restart (a container's pid 1): not a live owner.
  if (running && owner !== null && (owner === process.pid || !isAlive(owner)) && (await stopOrphan(join(root, "pg"), running.pid))) {
    logger.warn({ pid: running.pid, deadOwner: owner }, "stopped the embedded PostgreSQL that a killed npm start left running");
    running = null;
  }
  if (running) {
    throw new EmbeddedPostgresError(
      `the embedded PostgreSQL under ${join(root, "pg")} is already running (pid ${running.pid}): stop the npm start that ` +
        `runs it (if none does, kill ${running.pid}), or set DATABASE_URL to reach its database`,
    );
  }
  try {
    const layout = await embeddedLayout(root, resolve(options.runtimeDir), logger);
    const created = !existsSync(join(layout.databaseDir, "PG_VERSION"));
    if (created) await initdb(layout, password);
    const port = await freePort();
    const stopPostmaster = await startPostmaster(layout, port, logger);
    writeFileSync(join(root, OWNER_FILE), `${process.pid}\n`);
    const stop = async () => {
      await stopPostmaster();
      rmSync(join(root, OWNER_FILE), { force: true });
    };
    return { url: urlFor(password, port), created, stop };
  } catch (err) {
    // A file system refusal (EACCES, ENOSPC, EROFS) is the operator's to fix too: one line, no stack.
    if (err instanceof EmbeddedPostgresError) throw err;
    throw new EmbeddedPostgresError(`the embedded PostgreSQL could not start (${(err as Error).message}): fix that, or set DATABASE_URL`);
  }
}

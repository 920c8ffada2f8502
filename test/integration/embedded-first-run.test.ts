import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { chmodSync, existsSync, lstatSync, mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { rest } from "../support/clients.js";
import { createTestDatabase } from "../support/database.js";
import { runCli } from "../support/server-process.js";

/**
 * The first hour on the embedded default: `npm start` with nothing configured, on a fresh data
 * directory under a private one (mode 0700, as /root is). Run as root, that is the case where the
 * postgres user cannot reach the data directory.
 */
const ROOT = join(import.meta.dirname, "../..");
const KEY_LINE = /^ {2}FIRST_ADMIN_API_KEY=(krn_[0-9a-f]{64})$/m;
let privateDir: string;
let embeddedPgDir: string;
let env: Record<string, string>;
const children = new Set<ChildProcess>();

before(() => {
  privateDir = mkdtempSync(join(tmpdir(), "embedded-first-run-"));
  chmodSync(privateDir, 0o700);
  embeddedPgDir = mkdtempSync(join(tmpdir(), "embedded-pg-dir-"));
  chmodSync(embeddedPgDir, 0o755);
  env = { DATA_DIR: join(privateDir, "data"), EMBEDDED_PG_DIR: embeddedPgDir };
});

after(async () => {
  for (const child of children) {
    child.kill("SIGTERM");
    await once(child, "exit");
  }
  rmSync(privateDir, { recursive: true, force: true });
  rmSync(embeddedPgDir, { recursive: true, force: true });
});

interface Started {
  child: ChildProcess;
  baseUrl: string;
  stdout: string[];
  stderr(): string;
  exited: Promise<number | null>;
}

/** `node src/main.ts` configured by `extra` alone; resolves when it listens, rejects if it exits first. */
async function start(extra: Record<string, string>): Promise<Started> {
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "info", ...extra },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  const exited = once(child, "exit").then(([code]) => (children.delete(child), code as number | null));
  let stderr = "";
  child.stderr!.on("data", (c) => (stderr += c));
  const stdout: string[] = [];
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s; stderr: ${stderr}`)), 60_000);
    void exited.then((code) => reject(new Error(`exited with ${code} before listening; stderr: ${stderr}`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      stdout.push(line);
      const { httpPort } = JSON.parse(line);
      if (httpPort) {
        clearTimeout(timer);
        resolve(httpPort);
      }
    });
  });
  return { child, baseUrl: `http://127.0.0.1:${port}`, stdout, stderr: () => stderr, exited };
}

async function stop(server: Started): Promise<void> {
  server.child.kill("SIGTERM");
  assert.equal(await server.exited, 0);
}

const listKeys = (baseUrl: string, key: string) => rest(baseUrl, "GET", "/api/v1/api-keys", { key });

test("a fresh embedded database: one admin key shown once, the CLI beside the running server, one server per data directory", async () => {
  const first = await start(env);
  assert.equal(first.stderr().split("FIRST_ADMIN_API_KEY=").length, 2, `one key on stderr, got:\n${first.stderr()}`);
  const key = KEY_LINE.exec(first.stderr())![1];
  assert.ok(!first.stdout.some((line) => line.includes(key)), "the key stays out of the JSON log");
  assert.equal((await listKeys(first.baseUrl, key)).status, 200, "the key is an admin's");

  // The CLI reaches the server's PostgreSQL: what it creates works on the running server at once.
  const cli = await runCli(["tenant", "create", "--name", "acme"], env);
  assert.equal(cli.code, 0, cli.stderr);
  const acme = JSON.parse(cli.stdout);
  assert.equal((await listKeys(first.baseUrl, acme.apiKey)).status, 200);

  const second = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: "0", GRPC_PORT: "0", ...env },
    stdio: ["ignore", "ignore", "pipe"],
    timeout: 30_000, // were it to start, it would be stopped and the exit code below would say so
  });
  let refusal = "";
  second.stderr.on("data", (c) => (refusal += c));
  const [code] = await once(second, "exit");
  assert.equal(code, 1);
  assert.match(refusal, /^error: the embedded PostgreSQL under .* is already running \(pid \d+\).*set DATABASE_URL/m);
  assert.doesNotMatch(refusal, /\n\s+at /, "no stack trace");

  const databaseLink = join(env.DATA_DIR, "pg");
  if (process.getuid!() === 0) {
    assert.ok(lstatSync(databaseLink).isSymbolicLink(), "as root, the cluster lives where the postgres user can reach it");
    assert.ok(readlinkSync(databaseLink).startsWith(join(embeddedPgDir, "clusters")));
  } else {
    assert.ok(lstatSync(databaseLink).isDirectory());
  }
  await stop(first);
  assert.ok(!existsSync(join(databaseLink, "postmaster.pid")), "stopping the server stops its PostgreSQL");

  const again = await start(env);
  assert.doesNotMatch(again.stderr(), KEY_LINE, "the key is shown only on creation");
  assert.equal((await listKeys(again.baseUrl, key)).status, 200, "and keeps working");

  // A SIGKILL leaves PostgreSQL running (no exit hook runs); the next start stops it and starts afresh.
  again.child.kill("SIGKILL");
  await again.exited;
  assert.ok(existsSync(join(databaseLink, "postmaster.pid")), "the killed server's PostgreSQL is still running");
  const afterKill = await start(env);
  assert.ok(
    afterKill.stdout.some((line) => JSON.parse(line).msg === "stopped the embedded PostgreSQL that a killed npm start left running"),
    afterKill.stdout.join("\n"),
  );
  assert.equal((await listKeys(afterKill.baseUrl, key)).status, 200, "the data survived");
  await stop(afterKill);
  assert.ok(!existsSync(join(databaseLink, "postmaster.pid")));
});

test("with DATABASE_URL, no tenant is created and no key is shown", async () => {
  const server = await start({ DATABASE_URL: await createTestDatabase(), API_KEY_PEPPER: "p".repeat(32), JWT_SIGNING_SECRET: "s".repeat(32) });
  await stop(server);
  assert.doesNotMatch(server.stderr(), /FIRST_ADMIN_API_KEY/);
});

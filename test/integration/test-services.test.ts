import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/**
 * test/services.sh on a machine that lacks a server, or whose server does not come up: one line
 * on stderr that says what to do, a non-zero exit, and nothing left behind. It is sourced under
 * run.sh's shell options, where a failing command used to end it silently with code 2.
 */
const ROOT = join(import.meta.dirname, "../..");
let scratch: string;
let pathWithoutRedisServer: string;

before(() => {
  scratch = mkdtempSync(join(tmpdir(), "services-sh-"));
  // When the tests run as root, the fake PostgreSQL binaries run as the postgres user.
  chmodSync(scratch, 0o755);
  pathWithoutRedisServer = shadowRedisServer();
});
after(() => rmSync(scratch, { recursive: true, force: true }));

function dir(name: string, executables: Record<string, string> = {}): string {
  const d = join(scratch, name);
  mkdirSync(d, { mode: 0o755 });
  for (const [file, body] of Object.entries(executables)) writeFileSync(join(d, file), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return d;
}

/** PATH with every directory holding redis-server replaced by a copy (of symlinks) without it. */
function shadowRedisServer(): string {
  return process.env.PATH!.split(delimiter)
    .map((entry, i) => {
      if (!existsSync(join(entry, "redis-server"))) return entry;
      const shadow = dir(`path-${i}`);
      for (const f of readdirSync(entry)) if (f !== "redis-server") symlinkSync(join(entry, f), join(shadow, f));
      return shadow;
    })
    .join(delimiter);
}

/** Sources services.sh as run.sh does, in a fresh bash with only the given environment. */
async function sourceServices(env: Record<string, string>): Promise<{ code: number | null; stderr: string; leftovers: string[] }> {
  const tmp = mkdtempSync(join(scratch, "tmp-"));
  chmodSync(tmp, 0o755);
  const child = spawn("/bin/bash", ["-c", "set -euo pipefail; source test/services.sh; echo started"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? "/", TMPDIR: tmp, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (c) => (stderr += c));
  const [code] = await once(child, "close");
  return { code, stderr, leftovers: readdirSync(tmp) };
}

function assertOneLine(out: { code: number | null; stderr: string; leftovers: string[] }, pattern: RegExp): void {
  assert.notEqual(out.code, 0);
  assert.notEqual(out.code, null);
  const lines = out.stderr.trimEnd().split("\n");
  assert.equal(lines.length, 1, `one line on stderr, got:\n${out.stderr}`);
  assert.match(lines[0], pattern);
  assert.deepEqual(out.leftovers, [], "the servers' directory is removed");
}

describe("test/services.sh", () => {
  test("without PostgreSQL: one line naming the package to install", async () => {
    const out = await sourceServices({ PG_BIN_DIR: dir("no-postgres") });
    assertOneLine(out, /^test\/services\.sh: PostgreSQL \(initdb, pg_ctl\) not found: install with `apt-get install -y postgresql` \(Debian\)/);
  });

  test("without redis-server: one line naming the package to install", async () => {
    const out = await sourceServices({ PATH: pathWithoutRedisServer });
    assertOneLine(out, /^test\/services\.sh: redis-server not found: install with `apt-get install -y redis-server` \(Debian\)/);
  });

  test("without either: one line naming both", async () => {
    const out = await sourceServices({ PATH: pathWithoutRedisServer, PG_BIN_DIR: dir("no-postgres-either") });
    assertOneLine(out, /not found: install with `apt-get install -y postgresql redis-server`/);
  });

  test("a Redis that never answers: gives up after 5 s with one line", async () => {
    const fake = dir("silent-redis", { "redis-server": "exit 0" });
    const out = await sourceServices({ PATH: `${fake}${delimiter}${process.env.PATH}` });
    assertOneLine(out, /^test\/services\.sh: redis-server did not answer on 127\.0\.0\.1:\d+ within 5 s$/);
  });

  test("a PostgreSQL that does not start: one line, and the Redis it started is stopped", async () => {
    const fake = dir("failing-postgres", { initdb: "exit 0", pg_ctl: "exit 1" });
    const out = await sourceServices({ PG_BIN_DIR: fake });
    assertOneLine(out, /^test\/services\.sh: PostgreSQL did not start on 127\.0\.0\.1:\d+ within 30 s$/);
  });
});

import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, requireEnv } from "../support/database.js";
import { spawnServer, type ServerProcess } from "../support/server-process.js";
import { TEST_INTERNAL_KEY, TEST_JWT_SECRET, TEST_PEPPER } from "../support/service.js";

/** WORKERS=2: a supervisor and two service processes on the same ports (src/supervisor.ts). */
let env: Record<string, string>;
before(async () => {
  env = {
    DATABASE_URL: await createTestDatabase(),
    REDIS_URL: requireEnv("TEST_REDIS_URL"),
    REDIS_KEY_PREFIX: `test:${randomBytes(6).toString("hex")}:`,
    API_KEY_PEPPER: TEST_PEPPER,
    JWT_SIGNING_SECRET: TEST_JWT_SECRET,
    API_KEY: TEST_INTERNAL_KEY,
    WORKERS: "2",
  };
});

const listeningPids = (server: ServerProcess) =>
  server.logs.filter((l) => l.msg === "decisioning service listening").map((l) => (l as unknown as { pid: number }).pid);

async function waitFor(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 300 && !check(); i++) await sleep(100);
  assert.ok(check(), what);
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function healthy(baseUrl: string): Promise<void> {
  for (let i = 0; i < 10; i++) {
    // A new connection each time, so the supervisor hands them out in turn.
    const res = await fetch(`${baseUrl}/healthz`, { headers: { connection: "close" } });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
  }
}

describe("several service processes (WORKERS)", () => {
  let server: ServerProcess;
  after(async () => {
    if (server.child.exitCode === null) server.child.kill("SIGKILL");
  });

  test("two processes share the ports, a dead one is replaced, SIGTERM drains them all", async () => {
    server = await spawnServer(env);
    await waitFor("two service processes listening", () => new Set(listeningPids(server)).size === 2);
    const [first, second] = listeningPids(server);
    assert.notEqual(first, server.child.pid, "the service runs in worker processes, not the supervisor");
    const ports = server.logs.filter((l) => l.msg === "decisioning service listening").map((l) => JSON.stringify([(l as any).httpPort, (l as any).grpcPort]));
    assert.equal(new Set(ports).size, 1, "both listen on the same HTTP and gRPC ports");
    await healthy(server.baseUrl);

    process.kill(first, "SIGKILL");
    await waitFor("a replacement process listening", () => listeningPids(server).length === 3);
    assert.ok(server.logs.some((l) => l.msg === "a service process exited; starting another"));
    await healthy(server.baseUrl);

    server.child.kill("SIGTERM");
    assert.equal(await server.exited, 0);
    for (const pid of listeningPids(server).slice(1)) assert.equal(alive(pid), false, `process ${pid} was stopped`);
    assert.ok(!alive(second));
  });

  test("without REDIS_URL the processes could not share counters: one process runs, and says so", async () => {
    const { REDIS_URL: _r, ...withoutRedis } = env;
    const single = await spawnServer(withoutRedis);
    try {
      assert.ok(single.logs.some((l) => l.msg === "WORKERS needs DATABASE_URL and REDIS_URL (or REDIS_CLUSTER_NODES); running one process"));
      assert.deepEqual(listeningPids(single), [single.child.pid]);
    } finally {
      single.child.kill("SIGTERM");
      assert.equal(await single.exited, 0);
    }
  });
});

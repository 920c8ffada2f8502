import { test, after } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, requireEnv } from "../support/database.js";
import { spawnServer, type ServerProcess } from "../support/server-process.js";
import { sampleValue } from "../support/prometheus.js";
import { TEST_INTERNAL_KEY, TEST_JWT_SECRET, TEST_PEPPER } from "../support/service.js";

/** WORKERS=2: the supervisor serves METRICS_PORT and sums what both service processes count. */
let server: ServerProcess | undefined;
after(() => {
  if (server && server.child.exitCode === null) server.child.kill("SIGKILL");
});

test("with WORKERS=2 one scrape of the supervisor's metrics port covers both processes", async () => {
  const spawned = await spawnServer({
    DATABASE_URL: await createTestDatabase(),
    REDIS_URL: requireEnv("TEST_REDIS_URL"),
    REDIS_KEY_PREFIX: `test:${randomBytes(6).toString("hex")}:`,
    API_KEY_PEPPER: TEST_PEPPER,
    JWT_SIGNING_SECRET: TEST_JWT_SECRET,
    API_KEY: TEST_INTERNAL_KEY,
    WORKERS: "2",
    METRICS_PORT: "0",
    METRICS_TOKEN: "cluster-token-0123456789",
  });
  server = spawned;
  const listening = () => spawned.logs.filter((l) => l.msg === "decisioning service listening");
  for (let i = 0; i < 300 && listening().length < 2; i++) await sleep(100);
  assert.equal(listening().length, 2);
  const metricsLogs = spawned.logs.filter((l) => l.msg === "metrics listening") as unknown as Array<{ metricsPort: number }>;
  assert.equal(metricsLogs.length, 1, "the supervisor serves the metrics port, the service processes do not");
  const [metricsLog] = metricsLogs;

  const calls = 8;
  for (let i = 0; i < calls; i++) {
    // A new connection each time, so that the supervisor hands them to both processes.
    const refused = await fetch(`${spawned.baseUrl}/api/v1/system-health`, { headers: { connection: "close" } });
    assert.equal(refused.status, 401);
    await refused.arrayBuffer();
  }
  const url = `http://127.0.0.1:${metricsLog.metricsPort}/metrics`;
  assert.equal((await fetch(url)).status, 401, "the token applies to the supervisor's port too");
  const res = await fetch(url, { headers: { authorization: "Bearer cluster-token-0123456789" } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const labels = { door: "rest", method: "decisioning.v1.SystemHealthService/ListHealthAlerts", status: "401" };
  assert.equal(sampleValue(text, "decisioning_requests_total", labels), calls);
  assert.equal(sampleValue(text, "decisioning_db_pool_max"), 20, "two processes with a pool of 10 each");

  spawned.child.kill("SIGTERM");
  assert.equal(await spawned.exited, 0);
});

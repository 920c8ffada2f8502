import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { pino } from "pino";
import { startTestService, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { sampleValue } from "../support/prometheus.js";
import { startPrivateRedis, type PrivateRedis } from "../support/private-redis.js";

let redis: PrivateRedis;
let svc: TestService;
const logged: Array<Record<string, any>> = [];

before(async () => {
  redis = await startPrivateRedis();
  const logger = pino({ level: "info" }, { write: (line: string) => void logged.push(JSON.parse(line)) });
  svc = await startTestService({ redisUrl: redis.url, metricsPort: 0 }, undefined, logger);
});
after(async () => {
  await svc.stop();
  await redis.stop().catch(() => {});
});

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await sleep(100);
  }
  assert.fail(what);
}

const redisErrors = async () => {
  const text = await (await fetch(`http://127.0.0.1:${svc.running.metricsPort}/metrics`)).text();
  return sampleValue(text, "decisioning_redis_errors_total")!;
};
const messages = (msg: string) => logged.filter((l) => l.msg === msg).length;

test("a Redis outage shows in the metrics, request statistics are dropped with one warning, and flow again after", async () => {
  const t = await svc.createTenant();
  assert.equal(await redisErrors(), 0);
  await redis.stop();
  await until("the Redis error counter rises", async () => (await redisErrors()) > 0);

  // Calls go on (system health lives in PostgreSQL) while several flushes fail.
  for (let i = 0; i < 2; i++) {
    assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/system-health", { key: t.apiKey })).status, 200);
    await sleep(1_100);
  }
  assert.equal(messages("request statistics could not be written to Redis; dropping them until it answers"), 1, "once per outage");
  const stats = svc.running.services.observability.requestStats;
  await assert.rejects(stats.http5xxCount(t.tenantId, new Date(Date.now() - 60_000), new Date()), "reads report the outage to the caller");

  await redis.start();
  await until("Redis answers the service again", async () => (await svc.running.foundation.redis!.ping().catch(() => null)) === "PONG");
  const from = new Date();
  assert.equal((await rest(svc.baseUrl, "GET", "/api/v1/system-health", { key: t.apiKey })).status, 200);
  await until("request statistics flow again", async () => (await stats.latencyP99Ms(t.tenantId, from, new Date(Date.now() + 1))) !== null);
  assert.equal(messages("request statistics reach Redis again"), 1);
});

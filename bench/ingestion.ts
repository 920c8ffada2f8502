/**
 * `npm run bench:ingestion`: the ingestion lane of issue 23, section 6. Loads a CSV of
 * BENCH_INGEST_ROWS rows (default 1,000,000, about 100 MB) from the local S3 server (s3rver behind
 * the SigV4 check of test/support/s3-server.ts) with `upsert` into an empty table, then with
 * `blue_green` over it, and prints rows per second and the peak resident memory of the service: the
 * pipelines run in a service process of their own (`node src/main.ts` with `npm start`'s node
 * options, as an operator starts it, on the harness's database, Redis and keys), whose peak RSS
 * (VmHWM, reset before each run) is read from /proc; this process, which holds the S3 server and
 * the generator, is reported beside it.
 *
 * Needs TEST_DATABASE_URL and TEST_REDIS_URL (`eval $(test/services.sh)` or the shared test servers).
 * BENCH_JSON writes the figures to a file.
 */
import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { tmpdir, cpus, totalmem } from "node:os";
import { join } from "node:path";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { CALLER, KEY, startIngestionHarness } from "../test/support/ingestion-harness.js";
import { spawnServer } from "../test/support/server-process.js";
import { SERVICE_NODE_OPTIONS } from "./stack.js";
import { TEST_JWT_SECRET, TEST_PEPPER } from "../test/support/service.js";
import { rest } from "../test/support/clients.js";

/** Peak resident set of a process since its peak was last reset (Linux /proc), in MiB. */
function peakRssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmHWM:"));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

const ROWS = Number(process.env.BENCH_INGEST_ROWS ?? 1_000_000);

async function generate(path: string): Promise<number> {
  const out = createWriteStream(path);
  const write = async (s: string) => {
    if (!out.write(s)) await once(out, "drain");
  };
  await write("customer_id,name,email,age,balance,city,updated_at\n");
  let chunk = "";
  for (let i = 0; i < ROWS; i++) {
    const id = String(i).padStart(8, "0");
    chunk += `c${id},Customer number ${id},customer${id}@example.com,${18 + (i % 70)},${(i % 100000) / 100},City ${i % 977},2025-06-${String(1 + (i % 28)).padStart(2, "0")}T12:00:00Z\n`;
    if (chunk.length > 1 << 20) {
      await write(chunk);
      chunk = "";
    }
  }
  await write(chunk);
  out.end();
  await once(out, "finish");
  return statSync(path).size;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), "ingest-bench-"));
  const file = join(dir, "customers.csv");
  const bytes = await generate(file);
  const h = await startIngestionHarness({ logLevel: process.env.BENCH_LOG_LEVEL ?? "silent" });
  let service: Awaited<ReturnType<typeof spawnServer>> | undefined;
  try {
    const client = new S3Client({
      region: "us-east-1",
      endpoint: h.s3.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: h.s3.accessKeyId, secretAccessKey: h.s3.secretAccessKey },
      requestChecksumCalculation: "WHEN_REQUIRED",
    });
    await client.send(new PutObjectCommand({ Bucket: "feeds", Key: "bench/customers.csv", Body: createReadStream(file), ContentLength: bytes }));
    client.destroy();
    const connectorId = (await h.call("POST", "/api/v1/connectors", h.connectorBody())).body.id;
    const fields = [
      { name: "customer_id", dataType: "varchar", length: 16, isPrimaryKey: true },
      { name: "name", dataType: "text" },
      { name: "email", dataType: "text" },
      { name: "age", dataType: "integer" },
      { name: "balance", dataType: "numeric", precision: 12, scale: 2 },
      { name: "city", dataType: "text" },
      { name: "updated_at", dataType: "timestamp" },
    ];
    const schema = await h.call("POST", "/api/v1/schemas", { name: "bench_customers", entityType: "custom", fields });
    if (schema.status !== 201) throw new Error(JSON.stringify(schema.body));
    const cfg = h.svc.config;
    service = await spawnServer({
      DATABASE_URL: cfg.databaseUrl!,
      REDIS_URL: cfg.redisUrl!,
      REDIS_KEY_PREFIX: cfg.redisKeyPrefix,
      API_KEY_PEPPER: TEST_PEPPER,
      JWT_SIGNING_SECRET: TEST_JWT_SECRET,
      SETTINGS_ENCRYPTION_KEYS: `${KEY.id}:${KEY.secret}`,
      OUTBOUND_ALLOW_PRIVATE: "true",
      INGESTION_STS_ENDPOINT: h.sts.endpoint,
      AWS_ACCESS_KEY_ID: CALLER.accessKeyId,
      AWS_SECRET_ACCESS_KEY: CALLER.secretAccessKey,
      SCHEDULER: "off",
    }, "src/main.ts", SERVICE_NODE_OPTIONS);
    const pid = service.child.pid!;
    const figures: Record<string, unknown> = { rows: ROWS, bytes, nodeOptions: SERVICE_NODE_OPTIONS.join(" "), cpus: cpus().length, cpuModel: cpus()[0]?.model, totalMemMb: Math.round(totalmem() / 2 ** 20), node: process.version };
    for (const loadMode of ["upsert", "blue_green"]) {
      const p = await h.call("POST", "/api/v1/pipelines", {
        name: `bench-${loadMode}`,
        connectorId,
        ir: {
          nodes: [
            { id: "src", kind: "source", config: { path: "bench/", format: "csv" } },
            { id: "load", kind: "target", input: "src", schema: "bench_customers", loadMode, ...(loadMode === "upsert" ? { upsertKey: ["customer_id"] } : {}) },
          ],
        },
      });
      global.gc?.();
      let peak = process.memoryUsage().rss;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
      writeFileSync(`/proc/${pid}/clear_refs`, "5"); // resets the service's VmHWM to its current RSS
      const started = performance.now();
      const res = await rest(service.baseUrl, "POST", `/api/v1/pipelines/${p.body.id}/run`, { key: h.admin.apiKey, body: {} });
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      if (!res.body.ok) throw new Error(`${loadMode}: ${JSON.stringify(res.body)}`);
      const loaded = Number(res.body.nodeResults.find((r: { id: string }) => r.id === "load").rowsLoaded);
      const servicePeak = peakRssMb(pid);
      figures[loadMode] = { seconds: Number(seconds.toFixed(2)), rowsPerSecond: Math.round(ROWS / seconds), loaded, servicePeakRssMb: servicePeak, benchPeakRssMb: Math.round(peak / 2 ** 20) };
      console.log(JSON.stringify(res.body.nodeResults.map((r: { meta: unknown }) => r.meta)).slice(0, 300));
      console.log(`${loadMode.padEnd(10)} ${ROWS} rows (${(bytes / 2 ** 20).toFixed(0)} MB) in ${seconds.toFixed(2)} s: ${Math.round(ROWS / seconds)} rows/s, service peak RSS ${servicePeak} MB (S3 server and generator: ${Math.round(peak / 2 ** 20)} MB)`);
    }
    console.log(JSON.stringify(figures));
    if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(figures, null, 2));
  } finally {
    if (service) {
      service.child.kill("SIGTERM");
      await service.exited;
    }
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);

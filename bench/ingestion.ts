/**
 * `npm run bench:ingestion`: the ingestion lane of issue 23, section 6. Loads a CSV of
 * BENCH_INGEST_ROWS rows (default 1,000,000, about 100 MB) from the local S3 server (s3rver behind
 * the SigV4 check of test/support/s3-server.ts) with `upsert` into an empty table, then with
 * `blue_green` over it, and prints rows per second and the peak resident memory of this process,
 * which holds the service, the S3 server and the generator (so the service's own figure is lower).
 *
 * Needs TEST_DATABASE_URL and TEST_REDIS_URL (`eval $(test/services.sh)` or the shared test servers).
 * BENCH_JSON writes the figures to a file.
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { tmpdir, cpus, totalmem } from "node:os";
import { join } from "node:path";
import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { startIngestionHarness } from "../test/support/ingestion-harness.js";

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
    const figures: Record<string, unknown> = { rows: ROWS, bytes, cpus: cpus().length, cpuModel: cpus()[0]?.model, totalMemMb: Math.round(totalmem() / 2 ** 20), node: process.version };
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
      const started = performance.now();
      const res = await h.call("POST", `/api/v1/pipelines/${p.body.id}/run`, {});
      const seconds = (performance.now() - started) / 1000;
      clearInterval(sampler);
      if (!res.body.ok) throw new Error(`${loadMode}: ${JSON.stringify(res.body)}`);
      const loaded = Number(res.body.nodeResults.find((r: { id: string }) => r.id === "load").rowsLoaded);
      figures[loadMode] = { seconds: Number(seconds.toFixed(2)), rowsPerSecond: Math.round(ROWS / seconds), loaded, peakRssMb: Math.round(peak / 2 ** 20) };
      console.log(JSON.stringify(res.body.nodeResults.map((r: { meta: unknown }) => r.meta)).slice(0, 300));
      console.log(`${loadMode.padEnd(10)} ${ROWS} rows (${(bytes / 2 ** 20).toFixed(0)} MB) in ${seconds.toFixed(2)} s: ${Math.round(ROWS / seconds)} rows/s, peak RSS ${Math.round(peak / 2 ** 20)} MB`);
    }
    console.log(JSON.stringify(figures));
    if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(figures, null, 2));
  } finally {
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

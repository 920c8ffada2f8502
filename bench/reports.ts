/**
 * `npm run bench:reports`: report previews over 1,000,000 recommendations (issue 21, section 5).
 *
 * Needs TEST_DATABASE_URL and TEST_REDIS_URL (eval $(test/services.sh) or the shared test
 * services). It starts the service in this process on a database of its own, seeds one tenant in
 * PostgreSQL itself (generate_series; nothing goes through Node row by row): BENCH_REPORT_ROWS
 * recommendations (default 1,000,000) over the last 30 days, 1-3 offers each of 50, one impression
 * row per offer, a click on 10% of impressions and a conversion with value on 3%, funnel figures and
 * a trace row per decision. Then it times `POST …/preview` of one template per format, each with
 * offer_performance, channel_performance, decision_volume and funnel over 30 days in Europe/Berlin,
 * BENCH_REPORT_REPEATS times (3), and prints the median and the worst per format, and the seeding
 * time. The database is dropped at the end.
 */
import { randomUUID } from "node:crypto";
import { availableParallelism, cpus } from "node:os";
import { rest } from "../test/support/clients.js";
import { startTestService } from "../test/support/service.js";

const ROWS = Number(process.env.BENCH_REPORT_ROWS) || 1_000_000;
const REPEATS = Number(process.env.BENCH_REPORT_REPEATS) || 3;
const FORMATS = ["csv", "markdown", "html", "pdf"] as const;

const svc = await startTestService({ logLevel: "warn" });
const { tenantId, apiKey } = await svc.createTenant("bench-reports");
const t0 = performance.now();
await svc.sql(
  `INSERT INTO offers (tenant_id, id, name) SELECT $1, gen_random_uuid(), 'Offer ' || g FROM generate_series(1, 50) g`,
  [tenantId],
);
await svc.sql(
  `INSERT INTO catalog_entries (tenant_id, id, kind, name) SELECT $1, gen_random_uuid(), 'channel', c FROM unnest(ARRAY['web', 'email', 'app']) c`,
  [tenantId],
);
// Recommendations with 1-3 offers, spread over the last 30 days.
await svc.sql(
  `WITH o AS (SELECT array_agg(id ORDER BY name) AS ids FROM offers WHERE tenant_id = $1)
   INSERT INTO recommendations (tenant_id, id, customer_id, offers, qualified_count, suppressed_count, degraded_scoring, created_at)
   SELECT $1, gen_random_uuid(), 'c' || (g % 50000),
     (SELECT jsonb_agg(jsonb_build_object('offerId', o.ids[1 + ((g + k * 17) % 50)], 'rank', k)) FROM generate_series(1, 1 + g % 3) k),
     5 + g % 4, g % 2, g % 97 = 0, now() - (g::float8 / $2) * interval '30 days'
   FROM generate_series(1, $2::int) g, o`,
  [tenantId, ROWS],
);
const channels = (await svc.sql(`SELECT array_agg(id) AS ids FROM catalog_entries WHERE tenant_id = $1 AND kind = 'channel'`, [tenantId]))[0].ids;
await svc.sql(
  `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, rank, offer_id, channel_id, outcome, created_at)
   SELECT r.tenant_id, gen_random_uuid(), r.customer_id, r.id, (e.value->>'rank')::int, (e.value->>'offerId')::uuid,
     ($2::uuid[])[1 + abs(hashtext(r.id::text)) % 3], 'impression', r.created_at
   FROM recommendations r, jsonb_array_elements(r.offers) e WHERE r.tenant_id = $1`,
  [tenantId, channels],
);
await svc.sql(
  `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, rank, offer_id, channel_id, outcome, idempotency_key, conversion_value, created_at)
   SELECT i.tenant_id, gen_random_uuid(), i.customer_id, i.recommendation_id, i.rank, i.offer_id, i.channel_id,
     CASE WHEN h % 100 < 3 THEN 'conversion' ELSE 'click' END, gen_random_uuid()::text,
     CASE WHEN h % 100 < 3 THEN 10 + h % 90 END, i.created_at + interval '1 minute'
   FROM (SELECT *, abs(hashtext(id::text)) AS h FROM interactions WHERE tenant_id = $1 AND outcome = 'impression') i WHERE i.h % 10 = 0`,
  [tenantId],
);
await svc.sql(
  `INSERT INTO decision_traces (tenant_id, id, recommendation_id, customer_id, selected_count, rejected_count, trace, inputs_hash, policy_version_hash, created_at)
   SELECT tenant_id, gen_random_uuid(), id, customer_id, jsonb_array_length(offers), 3, '\\x00'::bytea, 'h', 'p', created_at
   FROM recommendations WHERE tenant_id = $1`,
  [tenantId],
);
await svc.sql("ANALYZE recommendations; ANALYZE interactions; ANALYZE decision_traces", []);
const seedSeconds = (performance.now() - t0) / 1000;
const counts = (await svc.sql(
  `SELECT (SELECT count(*) FROM recommendations WHERE tenant_id = $1)::int AS recommendations,
          (SELECT count(*) FROM interactions WHERE tenant_id = $1)::int AS interactions`,
  [tenantId],
))[0];

const results: { format: string; medianMs: number; worstMs: number; bytes: number }[] = [];
for (const format of FORMATS) {
  const template = await rest(svc.baseUrl, "POST", "/api/v1/reports/templates", {
    key: apiKey,
    body: {
      name: `Bench ${format} ${randomUUID().slice(0, 4)}`,
      dataSources: [
        { sourceKey: "offer_performance", params: { days: 30, timezone: "Europe/Berlin" } },
        { sourceKey: "channel_performance", params: { days: 30, timezone: "Europe/Berlin" } },
        { sourceKey: "decision_volume", params: { days: 30, timezone: "Europe/Berlin" } },
        { sourceKey: "funnel", params: { days: 30, timezone: "Europe/Berlin" } },
      ],
      sections: [
        { id: "offers", title: "Offers", dataSourceIndex: 0 },
        { id: "channels", title: "Channels", dataSourceIndex: 1 },
        { id: "volume", title: "Volume", dataSourceIndex: 2 },
        { id: "funnel", title: "Funnel", dataSourceIndex: 3 },
      ],
      formats: [format],
      narrative: { enabled: true },
    },
  });
  if (template.status !== 201) throw new Error(JSON.stringify(template.body));
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < REPEATS; i++) {
    const start = performance.now();
    const res = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.body.id}/preview`, { key: apiKey, body: {} });
    times.push(performance.now() - start);
    if (res.status !== 200) throw new Error(JSON.stringify(res.body));
    bytes = res.body.artifacts[0].bytes;
  }
  times.sort((a, b) => a - b);
  results.push({ format, medianMs: Math.round(times[Math.floor(times.length / 2)]), worstMs: Math.round(times[times.length - 1]), bytes });
}
console.log(JSON.stringify({
  machine: { cpus: availableParallelism(), model: cpus()[0]?.model },
  seeded: { ...counts, seconds: Math.round(seedSeconds) },
  previews: results,
}, null, 2));
await svc.sql("DELETE FROM tenants WHERE id = $1", [tenantId]);
await svc.stop();

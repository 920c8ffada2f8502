import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startTestService, TEST_JWT_SECRET, type TestService } from "../support/service.js";
import { rest } from "../support/clients.js";
import { ALERT_TEST_CONFIG, createWebhookProvider, PROVIDER_SECRET } from "../support/alert-delivery.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";
import { createTemplate } from "../support/report-fixtures.js";
import { DOWNLOAD_LINK_TTL_SECONDS, downloadLinkKey, signedDownloadUrl } from "../../src/reports/report-download-links.js";
import { WEBHOOK_INLINE_MAX_BYTES } from "../../src/reports/report-delivery.js";

/** Webhook deliveries carry signed download links; the signed form of the download needs no credentials and grants exactly one artifact. */
const PUBLIC_URL = "https://reports.example.test";
let svc: TestService;
let t: { tenantId: string; apiKey: string };
let theirs: { tenantId: string; apiKey: string };
let receiver: Awaited<ReturnType<typeof startHttpReceiver>>;
/** Tenant t's delivered run: a large html artifact and a small csv one, as the webhook described them. */
let runId: string;
let html: any;
let csv: any;
let theirRunId: string;

/** A year of hourly buckets: 8,784 table rows, far over the inline limit in html. */
const YEAR_HOURLY = {
  dataSources: [{ sourceKey: "decision_volume", params: { from: "2024-01-01", to: "2024-12-31", granularity: "hour" } }],
  sections: [{ id: "volume", title: "Hourly volume", dataSourceIndex: 0 }],
  formats: ["html", "csv"],
};

before(async () => {
  svc = await startTestService({ ...ALERT_TEST_CONFIG, publicUrl: PUBLIC_URL });
  t = await svc.createTenant("reports-links");
  theirs = await svc.createTenant("reports-links-other");
  receiver = await startHttpReceiver();
  receiver.routes.set("/hook", { statuses: [200], secret: PROVIDER_SECRET });
  const hook = await createWebhookProvider(svc.baseUrl, t.apiKey, `${receiver.url}/hook`);
  const template = await createTemplate(svc, t.apiKey, { name: "Linked", ...YEAR_HOURLY, filters: { destinations: [hook] } });
  const res = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.id}/run-now`, { key: t.apiKey, body: {} });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  assert.equal(res.body.status, "completed", JSON.stringify(res.body));
  runId = res.body.runId;
  const delivery = receiver.received.find((r) => r.path === "/hook")!;
  assert.equal(delivery.signatureValid, true);
  const payload = JSON.parse(delivery.body);
  const artifacts = (payload.payload ?? payload).artifacts;
  html = artifacts.find((a: any) => a.format === "html");
  csv = artifacts.find((a: any) => a.format === "csv");
  const other = await createTemplate(svc, theirs.apiKey, { name: "Theirs", ...YEAR_HOURLY, formats: ["csv"] });
  const theirRun = await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${other.id}/run-now`, { key: theirs.apiKey, body: {} });
  assert.equal(theirRun.status, 202, JSON.stringify(theirRun.body));
  theirRunId = theirRun.body.runId;
});
after(async () => {
  await receiver.close();
  await svc.stop();
});

/** The link's path and query against the test server (PUBLIC_URL names no listening host). */
const local = (url: string) => {
  assert.ok(url.startsWith(`${PUBLIC_URL}/`), url);
  return `${svc.baseUrl}${url.slice(PUBLIC_URL.length)}`;
};
const withQuery = (url: string, change: Record<string, string | null>) => {
  const u = new URL(url);
  for (const [k, v] of Object.entries(change)) v === null ? u.searchParams.delete(k) : u.searchParams.set(k, v);
  return u.toString();
};
const withRun = (url: string, from: string, to: string) => url.replace(`/runs/${from}/`, `/runs/${to}/`);
const KEY = downloadLinkKey(TEST_JWT_SECRET);

async function refused(url: string, status: number, reason: string, headers: Record<string, string> = {}): Promise<void> {
  const res = await fetch(local(url), { headers });
  const body = await res.json();
  assert.equal(res.status, status, JSON.stringify(body));
  assert.equal(body.reason, reason);
  assert.equal(typeof body.detail, "string");
}

test("a large artifact travels as a signed link to PUBLIC_URL (no base64); every artifact has one, valid for 7 days", () => {
  assert.ok(html.bytes > WEBHOOK_INLINE_MAX_BYTES, `html is ${html.bytes} bytes`);
  assert.equal(html.base64, null);
  assert.equal(html.downloadPath, `/api/v1/reports/runs/${runId}/artifacts/html`);
  const url = new URL(html.downloadUrl);
  assert.equal(`${url.origin}${url.pathname}`, `${PUBLIC_URL}/api/v1/reports/runs/${runId}/artifacts/html`);
  assert.equal(url.searchParams.get("tenant"), t.tenantId);
  assert.match(url.searchParams.get("signature")!, /^[0-9a-f]{64}$/);
  const expires = Number(url.searchParams.get("expires"));
  assert.ok(Math.abs(expires - (Date.now() / 1000 + DOWNLOAD_LINK_TTL_SECONDS)) < 120, String(expires));
  assert.equal(html.downloadUrlExpiresAt, new Date(expires * 1000).toISOString());
  assert.ok(csv.bytes <= WEBHOOK_INLINE_MAX_BYTES);
  assert.ok(csv.base64);
  assert.match(csv.downloadUrl, new RegExp(`/runs/${runId}/artifacts/csv\\?`));
});

test("the signed link downloads without credentials: the same bytes, Content-Type and Content-Disposition as the authenticated route", async () => {
  const signed = await fetch(local(html.downloadUrl));
  assert.equal(signed.status, 200);
  const authed = await fetch(`${svc.baseUrl}${html.downloadPath}`, { headers: { "x-api-key": t.apiKey } });
  assert.equal(authed.status, 200);
  assert.equal(signed.headers.get("content-type"), "text/html; charset=utf-8");
  assert.equal(signed.headers.get("content-type"), authed.headers.get("content-type"));
  assert.match(signed.headers.get("content-disposition") ?? "", /^attachment; filename="linked-\d{4}-\d{2}-\d{2}\.html"$/);
  assert.equal(signed.headers.get("content-disposition"), authed.headers.get("content-disposition"));
  const bytes = Buffer.from(await signed.arrayBuffer());
  assert.equal(bytes.length, html.bytes);
  assert.ok(bytes.equals(Buffer.from(await authed.arrayBuffer())));
  assert.match(bytes.toString("utf8"), /Hourly volume/);
  // The small one too, matching what was inline.
  const small = await fetch(local(csv.downloadUrl));
  assert.equal(small.status, 200);
  assert.ok(Buffer.from(await small.arrayBuffer()).equals(Buffer.from(csv.base64, "base64")));
  // Without a signature the path is the authenticated route as before.
  const bare = await fetch(`${svc.baseUrl}${html.downloadPath}`);
  assert.equal(bare.status, 401);
});

test("a tampered, truncated or incomplete signature is refused, as is a changed expiry or tenant", async () => {
  const sig = new URL(html.downloadUrl).searchParams.get("signature")!;
  const flipped = `${sig.slice(0, -1)}${sig.endsWith("0") ? "1" : "0"}`;
  await refused(withQuery(html.downloadUrl, { signature: flipped }), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(html.downloadUrl, { signature: sig.slice(0, 63) }), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(html.downloadUrl, { signature: sig.toUpperCase() }), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(html.downloadUrl, { signature: "" }), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(html.downloadUrl, { expires: null }), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(html.downloadUrl, { tenant: null }), 401, "DOWNLOAD_LINK_INVALID");
  const expires = Number(new URL(html.downloadUrl).searchParams.get("expires"));
  await refused(withQuery(html.downloadUrl, { expires: String(expires + 86_400) }), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(html.downloadUrl, { tenant: theirs.tenantId }), 401, "DOWNLOAD_LINK_INVALID");
  // The signature alone decides: a valid key beside a bad signature does not rescue it.
  await refused(withQuery(html.downloadUrl, { signature: flipped }), 401, "DOWNLOAD_LINK_INVALID", { "x-api-key": t.apiKey });
});

test("a signature grants one format of one run: not another format, nor another run of the tenant or of another tenant", async () => {
  await refused(html.downloadUrl.replace("/artifacts/html?", "/artifacts/csv?"), 401, "DOWNLOAD_LINK_INVALID");
  await refused(html.downloadUrl.replace("/artifacts/html?", "/artifacts/pdf?"), 401, "DOWNLOAD_LINK_INVALID");
  await refused(html.downloadUrl.replace("/artifacts/html?", "/artifacts/exe?"), 401, "DOWNLOAD_LINK_INVALID");
  const template = await createTemplate(svc, t.apiKey, { name: "Second", formats: ["html"] });
  const second = (await rest(svc.baseUrl, "POST", `/api/v1/reports/templates/${template.id}/run-now`, { key: t.apiKey, body: {} })).body.runId;
  await refused(withRun(html.downloadUrl, runId, second), 401, "DOWNLOAD_LINK_INVALID");
  // Their run, with our signature, with or without naming their tenant.
  await refused(withRun(csv.downloadUrl, runId, theirRunId), 401, "DOWNLOAD_LINK_INVALID");
  await refused(withQuery(withRun(csv.downloadUrl, runId, theirRunId), { tenant: theirs.tenantId }), 401, "DOWNLOAD_LINK_INVALID");
});

test("an expired link is refused even though its signature is genuine", async () => {
  const past = Math.floor(Date.now() / 1000) - 1;
  const expired = signedDownloadUrl(PUBLIC_URL, KEY, { tenantId: t.tenantId, runId, format: "html", expires: past });
  await refused(expired, 401, "DOWNLOAD_LINK_EXPIRED");
  // The same link with a future expiry works: only the time differs.
  const fresh = signedDownloadUrl(PUBLIC_URL, KEY, { tenantId: t.tenantId, runId, format: "html", expires: past + 3600 });
  assert.equal((await fetch(local(fresh))).status, 200);
});

test("a genuinely signed link reaches only its own tenant's runs: 404 for another tenant's run or a format not rendered", async () => {
  const future = Math.floor(Date.now() / 1000) + 3600;
  // Signed for their tenant, naming our run: the lookup is scoped to their tenant, which has no such run.
  const cross = signedDownloadUrl(PUBLIC_URL, KEY, { tenantId: theirs.tenantId, runId, format: "html", expires: future });
  await refused(cross, 404, "NOT_FOUND");
  const notRendered = signedDownloadUrl(PUBLIC_URL, KEY, { tenantId: t.tenantId, runId, format: "pdf", expires: future });
  await refused(notRendered, 404, "NOT_FOUND");
  // A link signed under another secret is not ours.
  const forged = signedDownloadUrl(PUBLIC_URL, downloadLinkKey("another-secret-0123456789abcdef0123456789"), { tenantId: t.tenantId, runId, format: "html", expires: future });
  await refused(forged, 401, "DOWNLOAD_LINK_INVALID");
});

test("hostile signed requests are 4xx, never 5xx: odd run ids, encodings and oversize values; other verbs go on to the generated routes", async () => {
  const sig = new URL(html.downloadUrl).searchParams.get("signature")!;
  const query = new URL(html.downloadUrl).search;
  for (const path of [`/api/v1/reports/runs/%00/artifacts/html`, `/api/v1/reports/runs/%E0%A4%A/artifacts/html`, `/api/v1/reports/runs/${runId}/artifacts/%2e%2e`]) {
    const res = await fetch(`${svc.baseUrl}${path}${query}`);
    assert.equal(res.status, 401, path);
  }
  const changes: Record<string, string>[] = [{ expires: "9".repeat(400) }, { expires: "-1" }, { tenant: "x".repeat(5000) }, { signature: `${sig}${sig}` }];
  for (const change of changes) {
    await refused(withQuery(html.downloadUrl, change), 401, "DOWNLOAD_LINK_INVALID");
  }
  // A signature on another verb, or on a run's own path, is not a download link.
  const post = await fetch(local(html.downloadUrl), { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  assert.ok(post.status >= 400 && post.status < 500 && post.status !== 401, String(post.status));
  const runRead = await fetch(`${svc.baseUrl}/api/v1/reports/runs/${runId}${query}`);
  assert.equal(runRead.status, 401, "the run's read still needs credentials");
});

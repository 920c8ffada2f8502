import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import axe from "axe-core";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { startTestService, type TestService } from "../support/service.js";
import { getAsSent, rest } from "../support/clients.js";
import { TREES } from "../support/shap-trees.js";
import { hashPassword } from "../../src/sessions/password-hasher.js";
import { CHAMPION_VARIANT, HOLDOUT_VARIANT } from "../../src/core/index.js";

/**
 * The console in a real browser (Debian's chromium, driven by playwright-core) against the whole
 * service on real PostgreSQL and Redis. Every page is checked with axe-core and photographed; any
 * console error, failed request or unexpected error status fails the run.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const PASSWORD = "Console-Passw0rd";
const SHOTS = process.env.CONSOLE_SCREENSHOTS_DIR ?? mkdtempSync(join(tmpdir(), "console-screenshots-"));
mkdirSync(SHOTS, { recursive: true });

let svc: TestService;
let browser: Browser;
let tenant: { tenantId: string; userId: string; apiKey: string };
let adminEmail: string;
let viewerEmail: string;
let experimentId: string;
const CUSTOMER = "console-customer-1";
const SCORED_CUSTOMER = "console-customer-2";

const call = async (method: string, path: string, body?: unknown, key = tenant.apiKey) => {
  const res = await rest(svc.baseUrl, method, path, { key, body, headers: { "x-requested-with": "test" } });
  assert.ok(res.status < 300, `${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
};

/** A `datetime-local` value `deltaMs` from now, in this machine's zone (the browser's too). */
function localMinute(deltaMs: number): string {
  const at = new Date(Date.now() + deltaMs);
  return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

async function userWithPassword(userId: string): Promise<string> {
  await svc.sql("UPDATE users SET password_hash = $3, email_verified_at = now() WHERE tenant_id = $1 AND id = $2", [
    tenant.tenantId,
    userId,
    await hashPassword(PASSWORD),
  ]);
  return (await svc.sql("SELECT email FROM users WHERE tenant_id = $1 AND id = $2", [tenant.tenantId, userId]))[0].email;
}

/**
 * `samples` customers exposed to `variant` and `conversions` of them converted, as Recommend and
 * Respond write them (the results read these rows).
 */
async function expose(variant: string, samples: number, conversions: number, offerId: string) {
  await svc.sql(
    `INSERT INTO recommendations (tenant_id, id, customer_id, offers, experiment_id, experiment_variant)
     SELECT $1::uuid, gen_random_uuid(), $3::text || '-' || g, '[]'::jsonb, $2::uuid, $3::text FROM generate_series(1, $4::int) g`,
    [tenant.tenantId, experimentId, variant, samples],
  );
  await svc.sql(
    `INSERT INTO interactions (tenant_id, id, customer_id, recommendation_id, offer_id, outcome)
     SELECT tenant_id, gen_random_uuid(), customer_id, id, $4::uuid, 'conversion' FROM recommendations
     WHERE tenant_id = $1 AND experiment_id = $2 AND experiment_variant = $3 ORDER BY customer_id LIMIT $5`,
    [tenant.tenantId, experimentId, variant, offerId, conversions],
  );
}

before(async () => {
  svc = await startTestService();
  tenant = await svc.createTenant("Console Bank");
  adminEmail = await userWithPassword(tenant.userId);
  viewerEmail = await userWithPassword((await svc.createUser(tenant.tenantId, "viewer")).userId);

  // A decision with one offer kept and one dropped at qualification.
  const goldCard = await call("POST", "/api/v1/offers", { name: "Gold card", status: "active", priority: 50, category: "cards" });
  await call("POST", "/api/v1/offers", { name: "Paused promo", status: "paused" });
  const sdkKey = (await call("POST", "/api/v1/api-keys", { name: "sdk" })).key;
  await call("POST", "/api/v1/recommend", { customerId: CUSTOMER }, sdkKey);

  // An experiment whose samples break its split (10% holdout, then 50/50): a sample ratio mismatch.
  const model = (key: string) => call("POST", "/api/v1/algorithm-models", { name: key, key, type: "adaptive", family: "f" });
  const champion = await model("champion-model");
  const challenger = await model("challenger-model");
  experimentId = (
    await call("POST", "/api/v1/experiments", {
      name: "Card models",
      championModelId: champion.id,
      trafficSplit: { championPct: 50 },
      challengers: [{ modelId: challenger.id, key: "b", trafficPct: 50 }],
      holdoutPercent: 10,
    })
  ).id;
  await expose(HOLDOUT_VARIANT, 100, 5, goldCard.id);
  await expose(CHAMPION_VARIANT, 450, 40, goldCard.id);
  await expose("b", 300, 30, goldCard.id);

  // A condition a health monitor found, as the monitor records it.
  await svc.sql(
    `INSERT INTO health_alerts (tenant_id, id, key, severity, message) VALUES ($1, gen_random_uuid(), 'funnel:suppression_rate', 'warning', 'Suppression rate is 62% over the last hour')`,
    [tenant.tenantId],
  );
  await call("POST", "/api/v1/alerts", { name: "Low acceptance", metric: "acceptance_rate", operator: "lt", threshold: 0.05, channels: [{ type: "email", target: "ops@example.com" }] });

  // A report run, made now by hand.
  const template = await call("POST", "/api/v1/reports/templates", {
    name: "Weekly offers",
    dataSources: [{ sourceKey: "offer_performance", params: { days: 7 } }],
    sections: [{ id: "offers", title: "Offer performance", dataSourceIndex: 0 }],
    formats: ["csv"],
  });
  await call("POST", `/api/v1/reports/templates/${template.id}/run-now`, {});

  // A decision scored by a gradient-boosted model, explained (the tenant opts in) by TreeSHAP and a narrative.
  await call("PUT", "/api/v1/tenant-settings", { aiAnalyzerSettings: { llmExplanationsEnabled: true } });
  const premium = await call("POST", "/api/v1/offers", { name: "Premium card", status: "active", priority: 80 });
  await call("POST", "/api/v1/algorithm-models", { name: "GBT", key: "scorer", type: "gradient_boosted", config: { trees: TREES, featureMap: { age: "customer.age" }, baseScore: 0.4 } });
  await call("POST", "/api/v1/decision-flows", {
    name: "scored", key: "scored", status: "active", autoAssemble: false,
    config: { nodes: [{ type: "candidates", offerIds: [premium.id, goldCard.id] }, { type: "score", modelKey: "scorer" }, { type: "rank", count: 1 }] },
  });
  await call("PUT", `/api/v1/customers/${SCORED_CUSTOMER}`, { attributes: { age: 45 } });
  await call("POST", "/api/v1/recommend", { customerId: SCORED_CUSTOMER, flow: "scored" }, sdkKey);
  await svc.running.services.decisions.traces.flush();
  for (let i = 0; (await call("GET", "/api/v1/reports/runs")).data[0]?.status !== "completed"; i++) {
    assert.ok(i < 200, "the report run never completed");
    await new Promise((r) => setTimeout(r, 50));
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  console.log(`console screenshots: ${SHOTS}`);
});

after(async () => {
  await browser?.close();
  await svc?.stop();
});

/** A page that records every console error, page error, failed request and error status. */
async function openPage(context: BrowserContext) {
  const page = await context.newPage();
  const problems: string[] = [];
  const statuses: string[] = [];
  page.on("console", (msg) => {
    // An error status also logs "Failed to load resource"; statuses are checked on their own below.
    if (msg.type() === "error" && !msg.text().startsWith("Failed to load resource: the server responded with a status of")) {
      problems.push(`console: ${msg.text()}`);
    }
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("requestfailed", (req) => problems.push(`request failed: ${req.method()} ${req.url()} ${req.failure()?.errorText}`));
  page.on("response", (res) => {
    if (res.status() >= 400) statuses.push(`${res.status()} ${res.request().method()} ${new URL(res.url()).pathname}`);
  });
  return { page, problems, statuses };
}

/** axe-core on the page as it stands (no serious or critical violations), then a screenshot. */
async function check(page: Page, name: string) {
  await page.evaluate(axe.source);
  const violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> = await page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n: any) => ({ target: n.target })) }));
  });
  const serious = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(serious, [], `${name}: accessibility violations`);
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function signIn(page: Page, email: string) {
  await page.getByLabel("E-mail address").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
}

describe("the console in Chromium", () => {
  test("an editor's day: sign in, explore a decision, read an experiment, edit an offer, audit, sign out", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const { page, problems, statuses } = await openPage(context);
    try {
      const res = await page.goto(`${svc.baseUrl}/console/decisions`);
      assert.equal(res?.status(), 200);
      const csp = res!.headers()["content-security-policy"];
      assert.match(csp, /default-src 'self'/);
      assert.match(csp, /script-src 'self'(;|$)/);

      // Not signed in: the sign-in page, keeping the place asked for.
      await page.getByRole("heading", { name: "Sign in to the decisioning console" }).waitFor();
      assert.match(page.url(), /\/console\/sign-in\?next=%2Fdecisions/);
      await check(page, "01-sign-in");
      await page.getByLabel("E-mail address").fill(adminEmail);
      await page.getByLabel("Password").fill("Wrong-passw0rd");
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("alert").filter({ hasText: "Invalid e-mail address or password" }).waitFor();

      await signIn(page, adminEmail);
      await page.getByRole("heading", { name: "Decision explorer" }).waitFor();
      assert.equal(await page.getByTestId("tenant").textContent(), "Console Bank");
      assert.equal(await page.getByTestId("role").textContent(), "admin");

      // The decision made above, found by customer id; the dropped offer says where and why.
      await page.getByLabel("Customer id").fill(CUSTOMER);
      await page.getByRole("button", { name: "Find decisions" }).click();
      await page.getByText("Decisions 1–1 of 1").waitFor();
      // A window that ends before the decision finds nothing; one around now finds it again.
      await page.getByLabel("To", { exact: true }).fill("2020-01-01T00:00");
      await page.getByRole("button", { name: "Find decisions" }).click();
      await page.getByText("No decisions found.").waitFor();
      assert.match(page.url(), /until=2020-01-01T/);
      await page.getByLabel("From", { exact: true }).fill(localMinute(-3_600_000));
      await page.getByLabel("To", { exact: true }).fill(localMinute(3_600_000));
      await page.getByRole("button", { name: "Find decisions" }).click();
      await page.getByText("Decisions 1–1 of 1").waitFor();
      await check(page, "02-decisions");
      await page.locator("table tbody tr a").first().click();
      await page.getByRole("heading", { name: `Decision for ${CUSTOMER}` }).waitFor();
      const dropped = page.locator('[data-testid="candidates"] tr[data-offer="Paused promo"]');
      assert.match((await dropped.textContent()) ?? "", /dropped.*1\. Qualification.*Not eligible: offer status is paused/);
      const kept = page.locator('[data-testid="candidates"] tr[data-offer="Gold card"]');
      assert.match((await kept.textContent()) ?? "", /kept, rank 1.*0\.5.*default-adaptive \(adaptive\)/);
      assert.match((await page.getByTestId("replay-hash").textContent()) ?? "", /^[0-9a-f]{64}$/);
      for (const stage of ["1. Qualification", "2. Contact policy", "3. Scoring", "4. Ranking"]) {
        await page.getByRole("heading", { name: stage, exact: true }).waitFor();
      }
      await check(page, "03-decision-trace");

      // A decision of the gradient-boosted flow: TreeSHAP as a bar chart, and the narrative with its writer.
      await page.getByRole("link", { name: "Decisions", exact: true }).click();
      await page.getByLabel("Customer id").fill(SCORED_CUSTOMER);
      await page.getByRole("button", { name: "Find decisions" }).click();
      await page.getByText("Decisions 1–1 of 1").waitFor();
      await page.locator("table tbody tr a").first().click();
      await page.getByRole("button", { name: "Show TreeSHAP contributions" }).click();
      const shap = page.getByRole("img", { name: /^Premium card: score .*model scorer/ });
      await shap.waitFor();
      assert.match((await shap.textContent()) ?? "", /age = 45/);
      await page.getByRole("button", { name: "Write narrative" }).click();
      const narrative = page.locator("figure.narrative");
      await narrative.waitFor();
      assert.match((await narrative.locator("figcaption").textContent()) ?? "", /^Written by .+\(deterministic, /);
      assert.ok(((await narrative.locator("blockquote").textContent()) ?? "").length > 20);
      await check(page, "03b-decision-explained");

      // The experiment with a broken split shows the sample ratio mismatch.
      await page.getByRole("link", { name: "Experiments" }).click();
      await page.getByRole("link", { name: "Card models" }).click();
      await page.getByTestId("srm-banner").waitFor();
      assert.match((await page.getByTestId("srm-banner").textContent()) ?? "", /Sample ratio mismatch/);
      await page.getByRole("img", { name: /Wilson intervals/ }).waitFor();
      const results = await call("GET", `/api/v1/experiments/${experimentId}/results`);
      const champion = results.variants.find((v: any) => v.variant === CHAMPION_VARIANT);
      const championRow = (await page.getByRole("row", { name: /^Champion/ }).textContent()) ?? "";
      assert.ok(championRow.includes(`${(champion.rate * 100).toFixed(2)}%`), `${championRow} shows the API's rate ${champion.rate}`);
      assert.ok(championRow.includes(`${(champion.wilsonLower * 100).toFixed(2)}% – ${(champion.wilsonUpper * 100).toFixed(2)}%`), championRow);
      await check(page, "04-experiment");

      // Offers: the list, then an edit the service refuses, with its message at the field.
      await page.getByRole("link", { name: "Offers" }).click();
      await page.locator('tr[data-offer="Gold card"]').waitFor();
      // The filters are the list route's own (q, status): the old page leaves before the filtered one comes.
      await page.getByLabel("Status").selectOption("paused");
      await page.locator('tr[data-offer="Gold card"]').waitFor({ state: "detached" });
      await page.locator('tr[data-offer="Paused promo"]').waitFor();
      assert.equal(await page.locator('tr[data-offer="Gold card"]').count(), 0, "the status filter hides active offers");
      assert.match(page.url(), /status=paused/);
      await page.getByLabel("Status").selectOption("");
      await page.getByLabel("Name contains").fill("GOLD");
      await page.getByRole("button", { name: "Search" }).click();
      await page.waitForURL(/q=GOLD/);
      await page.locator('tr[data-offer="Paused promo"]').waitFor({ state: "detached" });
      await page.locator('tr[data-offer="Gold card"]').waitFor();
      assert.equal(await page.locator('tr[data-offer="Paused promo"]').count(), 0, "the search hides other names");
      await page.getByLabel("Name contains").fill("");
      await page.getByRole("button", { name: "Search" }).click();
      await page.locator('tr[data-offer="Paused promo"]').waitFor();
      await check(page, "05-offers");
      await page.getByRole("link", { name: "Gold card" }).click();
      await page.getByLabel("Priority (0-100)").fill("500");
      await page.getByRole("button", { name: "Save changes" }).click();
      const fieldError = page.locator('[data-field="priority"] .field-error');
      await fieldError.waitFor();
      assert.equal(await fieldError.textContent(), "must be between 0 and 100");
      assert.equal(await page.getByLabel("Priority (0-100)").getAttribute("aria-invalid"), "true");
      await check(page, "06-offer-validation");
      await page.getByLabel("Priority (0-100)").fill("60");
      await page.getByRole("button", { name: "Save changes" }).click();
      await page.getByRole("status").filter({ hasText: "Saved." }).waitFor();
      assert.equal((await call("GET", "/api/v1/offers/Gold%20card")).priority, 60);

      // Create an offer; the form lands on the new offer's page.
      await page.getByRole("link", { name: "← All offers" }).click();
      await page.getByRole("link", { name: "New offer" }).click();
      await page.getByLabel("Name").fill("Travel miles");
      await page.getByLabel("Priority (0-100)").fill("30");
      await page.getByRole("button", { name: "Create offer" }).click();
      await page.getByRole("heading", { name: "Offer Travel miles" }).waitFor();
      assert.equal((await call("GET", "/api/v1/offers/Travel%20miles")).priority, 30);

      // Pause from the list, through the same API.
      await page.getByRole("link", { name: "← All offers" }).click();
      await page.getByRole("button", { name: "Pause Gold card" }).click();
      await page.getByRole("button", { name: "Activate Gold card" }).waitFor();
      assert.equal((await call("GET", "/api/v1/offers/Gold%20card")).status, "paused");

      await page.getByRole("link", { name: "Health" }).click();
      await page.getByRole("heading", { name: "Alert rules" }).waitFor();
      await page.getByRole("cell", { name: "Suppression rate is 62% over the last hour" }).waitFor();
      assert.match((await page.getByRole("row", { name: /Weekly offers/ }).textContent()) ?? "", /Weekly offers.*completed.*manual.*\d+ ms.*csv/);
      const rule = (await page.getByRole("row", { name: /^Low acceptance/ }).textContent()) ?? "";
      assert.match(rule, /acceptance_rate lt 0\.05 over 5 min.*yes.*ok/);
      await check(page, "07-health");

      await page.getByRole("link", { name: "Audit" }).click();
      await page.getByTestId("chain").waitFor();
      assert.match((await page.getByTestId("chain").textContent()) ?? "", /^Intact/);
      await page.getByRole("cell", { name: "offer Gold card" }).first().waitFor();
      await check(page, "08-audit");

      // An ended session returns the person to sign-in and, after it, to where they were.
      await context.clearCookies();
      await page.getByRole("link", { name: "Experiments" }).click();
      await page.getByRole("heading", { name: "Sign in to the decisioning console" }).waitFor();
      assert.match(page.url(), /next=%2Fexperiments/);
      await signIn(page, adminEmail);
      await page.getByRole("heading", { name: "Experiments" }).waitFor();

      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("heading", { name: "Sign in to the decisioning console" }).waitFor();
      const after = await rest(svc.baseUrl, "GET", "/api/auth/session", { headers: { cookie: (await context.cookies()).map((c) => `${c.name}=${c.value}`).join("; ") } });
      assert.equal(after.status, 401, "signed out");

      assert.deepEqual(problems, []);
      assert.deepEqual(statuses, [
        "401 GET /api/auth/session",
        "401 POST /api/auth/sign-in",
        "400 PUT /api/v1/offers",
        "401 GET /api/v1/experiments",
      ]);
    } finally {
      await context.close();
    }
  });

  test("a viewer sees no write controls", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const { page, problems, statuses } = await openPage(context);
    try {
      // By keyboard alone: the form's fields in tab order, Enter submits.
      await page.goto(`${svc.baseUrl}/console/offers`);
      await page.getByLabel("E-mail address").focus();
      await page.keyboard.type(viewerEmail);
      await page.keyboard.press("Tab");
      await page.keyboard.type(PASSWORD);
      await page.keyboard.press("Enter");
      await page.locator('tr[data-offer="Gold card"]').waitFor();
      assert.equal(await page.getByTestId("role").textContent(), "viewer");
      assert.equal(await page.getByRole("link", { name: "New offer" }).count(), 0);
      assert.equal(await page.getByRole("button", { name: /^(Activate|Pause|Archive) / }).count(), 0);
      assert.equal(await page.getByRole("link", { name: "Audit" }).count(), 0, "the audit log is an admin's");
      await page.getByRole("link", { name: "Gold card" }).click();
      await page.getByLabel("Name").waitFor();
      assert.equal(await page.getByRole("button", { name: "Save changes" }).count(), 0);
      assert.ok(await page.getByLabel("Name").isDisabled());
      await check(page, "09-viewer-offer");
      assert.deepEqual(problems, []);
      assert.deepEqual(statuses, ["401 GET /api/auth/session"]);
    } finally {
      await context.close();
    }
  });

  test("sign-in offers the organization's SSO once its id is given (remembered on the browser), hiding the password form when SSO is enforced", async () => {
    // Configuring stores the issuer without asking it anything; the browser only needs the link, not the provider.
    const sso = await svc.createTenant("SSO Bank");
    await call("POST", "/api/v1/sso", { action: "configure", config: { oidcIssuer: "https://idp.example.com", oidcClientId: "console", enforceForAllUsers: true } }, sso.apiKey);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const { page, problems, statuses } = await openPage(context);
    try {
      await page.goto(`${svc.baseUrl}/console/offers?status=active`);
      await page.getByLabel("E-mail address").waitFor();
      assert.equal(await page.getByRole("link", { name: "Sign in with SSO" }).count(), 0, "no SSO without an organization");
      await page.getByLabel("Organization ID (optional)").fill(sso.tenantId);
      const link = page.getByRole("link", { name: "Sign in with SSO" });
      await link.waitFor();
      const href = new URL((await link.getAttribute("href"))!, svc.baseUrl);
      assert.equal(href.pathname, "/api/auth/sso/start");
      assert.equal(href.searchParams.get("tenant"), sso.tenantId);
      assert.equal(href.searchParams.get("returnTo"), "/console/offers?status=active");
      assert.equal(await page.getByLabel("Password").count(), 0, "the tenant enforces SSO: no password form");
      await check(page, "10-sign-in-sso");

      await page.reload();
      await page.getByRole("link", { name: "Sign in with SSO" }).waitFor();
      assert.equal(await page.getByLabel("Organization ID (optional)").inputValue(), sso.tenantId);
      await page.getByLabel("Organization ID (optional)").fill("");
      await page.getByLabel("Password").waitFor();
      assert.equal(await page.getByRole("link", { name: "Sign in with SSO" }).count(), 0);
      assert.deepEqual(problems, []);
      assert.deepEqual(statuses, ["401 GET /api/auth/session", "401 GET /api/auth/session"]);
    } finally {
      await context.close();
    }
  });

  test("the console's files: CSP on every answer, SPA fallback for pages, 404 for a missing asset, no way out of the folder", async () => {
    const page = await rest(svc.baseUrl, "GET", "/console/offers/some-id");
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type") ?? "", /text\/html/);
    assert.match(page.headers.get("content-security-policy") ?? "", /default-src 'self'/);
    assert.equal(page.headers.get("cache-control"), "no-store");
    assert.doesNotMatch(page.body, /<script>|<script type="module">[^<]/, "no inline script");
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(page.body)![1];
    const asset = await rest(svc.baseUrl, "GET", script);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get("cache-control") ?? "", /immutable/);
    assert.doesNotMatch(asset.body, /https?:\/\/(?!www\.w3\.org)[a-z]/i, "no request leaves the machine");
    assert.equal((await rest(svc.baseUrl, "GET", "/console/assets/missing.js")).status, 404);
    for (const path of ["/console/../package.json", "/console/%2e%2e/package.json", "/console/assets/%2e%2e/%2e%2e/%2e%2e/package.json", "/console/..%2f..%2fpackage.json"]) {
      assert.equal((await getAsSent(svc.baseUrl, path)).status, 404, path);
    }
    const bare = await fetch(`${svc.baseUrl}/console`, { redirect: "manual" });
    assert.equal(bare.status, 308);
    assert.equal(bare.headers.get("location"), "/console/");
    assert.equal((await rest(svc.baseUrl, "POST", "/console/offers", { body: {} })).status, 405);
  });
});

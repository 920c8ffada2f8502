import assert from "node:assert/strict";
import type { Config } from "../../src/config.js";
import { rest } from "./clients.js";
import { startTestService, type TestService } from "./service.js";

/**
 * What the alert tests start the service with: no scheduler, since the tests run the alert jobs
 * for the slots they choose and a real minute's run would change the rules under them; a settings
 * key, since webhook providers keep their signing secret encrypted; and a dispatcher that may reach
 * the test's local receiver (127.0.0.1) and gives up after two quick attempts, so that a failing
 * destination costs milliseconds.
 */
export const ALERT_TEST_CONFIG: Partial<Config> = {
  schedulerEnabled: false,
  settingsKeys: [{ id: "alerts-test", secret: "alerts-test-settings-key-0123456789abcdef" }],
  outbound: { allowPrivate: true, maxAttempts: 2, backoffMs: 10, backoffMaxMs: 20, timeoutMs: 3000 },
};

/** The signing secret of the providers createWebhookProvider makes. */
export const PROVIDER_SECRET = "whsec-alerts-0123456789";

let providers = 0;

/** A webhook notification provider of the key's tenant, created through the providers API; its id. */
export async function createWebhookProvider(baseUrl: string, apiKey: string, url: string): Promise<string> {
  const body = { type: "webhook", name: `hook-${++providers}`, config: { url, secret: PROVIDER_SECRET } };
  const res = await rest(baseUrl, "POST", "/api/v1/notifications/providers", { key: apiKey, body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.id;
}

/** Two tenants of one service, a viewer of the first, and a webhook provider of each: the setting of the tests of routes that name providers. */
export interface TwoTenantsWithProviders {
  svc: TestService;
  mine: { tenantId: string; apiKey: string };
  theirs: { tenantId: string; apiKey: string };
  viewerKey: string;
  myProvider: string;
  theirProvider: string;
}

/** Starts the service with ALERT_TEST_CONFIG and makes the two tenants, the viewer and the providers. */
export async function startTwoTenantsWithProviders(): Promise<TwoTenantsWithProviders> {
  const svc = await startTestService(ALERT_TEST_CONFIG);
  const mine = await svc.createTenant("mine");
  const theirs = await svc.createTenant("theirs");
  return {
    svc,
    mine,
    theirs,
    viewerKey: (await svc.createUser(mine.tenantId, "viewer")).apiKey,
    myProvider: await createWebhookProvider(svc.baseUrl, mine.apiKey, "https://hooks.example.com/mine"),
    theirProvider: await createWebhookProvider(svc.baseUrl, theirs.apiKey, "https://hooks.example.com/theirs"),
  };
}

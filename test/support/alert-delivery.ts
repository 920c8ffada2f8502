import assert from "node:assert/strict";
import type { Config } from "../../src/config.js";
import { rest } from "./clients.js";

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

import type { IdentityService } from "./identity/identity-service.js";

export const FIRST_TENANT_NAME = "default";

/**
 * The first start of the embedded default: a brand-new database has no tenant, so nobody could call
 * the service until they found the CLI. This creates one and shows its admin key this once. It goes
 * to stderr as a block for a person to read, never into the JSON log: only its hash is stored.
 */
export async function createFirstTenant(identity: IdentityService, out: NodeJS.WritableStream = process.stderr): Promise<void> {
  const { tenantId, apiKey } = await identity.createTenant(FIRST_TENANT_NAME);
  const rule = "=".repeat(78);
  out.write(
    [
      rule,
      `New embedded database: created the tenant "${FIRST_TENANT_NAME}" and an admin API key for it.`,
      "It is shown only this once; keep it (send it as the X-API-Key header):",
      "",
      `  FIRST_TENANT_ID=${tenantId}`,
      `  FIRST_ADMIN_API_KEY=${apiKey}`,
      "",
      "More tenants, users and keys: npm run --silent cli -- tenant create --name <name> (README).",
      rule,
      "",
    ].join("\n"),
  );
}

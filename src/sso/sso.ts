import type { Sequelize } from "sequelize";
import { SsoService as SsoServiceDesc } from "../../gen/decisioning/v1/sso_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { AuthOidcConfig, OutboundConfig } from "../config.js";
import type { IdentityService } from "../identity/identity-service.js";
import type { IdentityStore } from "../identity/identity-store.js";
import type { Logger } from "../platform/logger.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import type { ServiceRegistration } from "../platform/service-registration.js";
import type { SettingsCipher } from "../platform/settings-cipher.js";
import type { Transaction } from "../platform/db.js";
import type { SessionIssuer } from "../sessions/session-issuer.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { OidcClient } from "./oidc-client.js";
import { createMemorySignInAttempts, createRedisSignInAttempts, type AttemptsRedis } from "./sign-in-attempts.js";
import { SsoConfigService } from "./sso-config-service.js";
import { SsoConfigStore } from "./sso-config-store.js";
import { createSsoRoutes } from "./sso-routes.js";
import { openSsoSecret, sealSsoSecret } from "./sso-secret.js";
import { SsoSignIn } from "./sso-sign-in.js";

export interface SsoOptions {
  db: Sequelize;
  redis: AttemptsRedis | null;
  identityStore: IdentityStore;
  identity: IdentityService;
  audit: AuditLog;
  cipher: SettingsCipher;
  sessions: SessionIssuer;
  rateLimits: RateLimitPolicy;
  outbound: OutboundConfig;
  authOidc: AuthOidcConfig | null;
  publicUrl: string | null;
  logger: Logger;
}

export interface Sso {
  services: ServiceRegistration[];
  httpRoutes: HttpRoute[];
  /**
   * The sessions' PasswordSignInPolicy (src/sessions/password-sign-in-policy.ts): the tenant's
   * `enforceForAllUsers` refuses password sign-in with a reason; null allows it.
   */
  passwordSignInPolicy: { refusal(tenantId: string): Promise<string | null> };
  /** Key rotation: re-seals stored client secrets not under the current key, in the caller's transaction. */
  rotateSecrets(t: Transaction, currentKeyId: string): Promise<number>;
}

/** Sign-in through identity providers: tenant SSO (spec 2.12, 4.19) and the deployment's own provider (5.5). */
export function createSso(o: SsoOptions): Sso {
  const store = new SsoConfigStore(o.db);
  const oidc = new OidcClient(o.outbound);
  const attempts = o.redis ? createRedisSignInAttempts(o.redis) : createMemorySignInAttempts();
  const configs = new SsoConfigService(o.db, store, o.cipher, o.audit, oidc, attempts, o.outbound);
  const signIn = new SsoSignIn(o.db, o.identityStore, o.identity, configs, oidc, attempts, o.sessions, o.audit);
  return {
    services: [{ service: SsoServiceDesc, impl: configs as never }],
    httpRoutes: createSsoRoutes({ signIn, configs, rateLimits: o.rateLimits, logger: o.logger, authOidc: o.authOidc, publicUrl: o.publicUrl, secureCookie: o.sessions.secureCookie }),
    passwordSignInPolicy: { refusal: (tenantId) => configs.passwordSignInRefusal(tenantId) },
    async rotateSecrets(t, currentKeyId) {
      const stale = await store.staleSecretsAcrossTenants(t, currentKeyId);
      for (const row of stale) {
        const sealed = sealSsoSecret(o.cipher, row.tenant_id, openSsoSecret(o.cipher, row)!);
        await store.setSecret(t, row.tenant_id, sealed.ciphertext, sealed.keyId);
      }
      return stale.length;
    },
  };
}

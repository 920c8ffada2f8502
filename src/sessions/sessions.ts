import type { Sequelize } from "sequelize";
import type { AuditLog } from "../audit/audit-log.js";
import type { Authenticator, SessionChecks } from "../identity/authenticator.js";
import type { IdentityStore } from "../identity/identity-store.js";
import type { Dispatcher } from "../notifications/outbound.js";
import type { Bus } from "../platform/bus.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import type { RedisClient } from "../platform/redis.js";
import type { Secrets } from "../platform/secrets.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { AccountMailer } from "./account-mail.js";
import { AccountStore } from "./account-store.js";
import { createAuthRoutes } from "./auth-routes.js";
import { AuthTokenStore } from "./auth-token-store.js";
import { ALLOW_PASSWORD_SIGN_IN, type PasswordSignInPolicy } from "./password-sign-in-policy.js";
import { SessionIssuer } from "./session-issuer.js";
import { createDatabaseSessionRevocations, createRedisSessionRevocations } from "./session-revocations.js";
import { SessionService } from "./session-service.js";

/**
 * What checks a session cookie, built before the Authenticator that uses it: the issuer (signing
 * secret, cookie flags, clock) and the sign-out list (Redis, or PostgreSQL without REDIS_URL).
 */
export function createSessionChecks(o: { secrets: Secrets; db: Sequelize; redis: RedisClient | null; secureCookie: boolean; now: () => number }): SessionChecks {
  return {
    issuer: new SessionIssuer(o.secrets, o.secureCookie, o.now),
    revocations: o.redis ? createRedisSessionRevocations(o.redis) : createDatabaseSessionRevocations(o.db, o.now),
  };
}

export interface SessionsOptions {
  db: Sequelize;
  bus: Bus;
  logger: Logger;
  checks: SessionChecks;
  authenticator: Authenticator;
  identityStore: IdentityStore;
  dispatcher: Dispatcher;
  audit: AuditLog;
  initializeTenant: (t: Transaction, ctx: TenantContext) => Promise<void>;
  rateLimits: RateLimitPolicy;
  publicUrl: string;
  registrationEnabled: boolean;
  /** Tenant SSO's enforceForAllUsers; by default every tenant allows passwords. */
  passwordSignInPolicy?: PasswordSignInPolicy;
  now: () => number;
}

export interface Sessions {
  service: SessionService;
  /** Issues the cookie for other ways in (identity provider, tenant SSO), so every session is one kind. */
  issuer: SessionIssuer;
  /** The /api/auth routes, for Services.httpRoutes. */
  routes: HttpRoute[];
  /** Waits for account mails still being sent. */
  settled(): Promise<void>;
}

/** Sessions, registration, verification and password reset (docs/sessions.md), built together. */
export function createSessions(o: SessionsOptions): Sessions {
  const mailer = new AccountMailer(o.dispatcher, o.publicUrl, o.logger);
  const service = new SessionService({
    identityStore: o.identityStore,
    accounts: new AccountStore(o.db),
    tokens: new AuthTokenStore(o.db),
    issuer: o.checks.issuer,
    revocations: o.checks.revocations,
    mailer,
    bus: o.bus,
    audit: o.audit,
    initializeTenant: o.initializeTenant,
    passwordSignInPolicy: o.passwordSignInPolicy ?? ALLOW_PASSWORD_SIGN_IN,
    registrationEnabled: o.registrationEnabled,
    logger: o.logger,
    now: o.now,
  });
  return {
    service,
    issuer: o.checks.issuer,
    routes: createAuthRoutes({ service, authenticator: o.authenticator, issuer: o.checks.issuer, rateLimits: o.rateLimits, logger: o.logger }),
    settled: () => mailer.settled(),
  };
}

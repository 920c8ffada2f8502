import type { Sequelize } from "sequelize";
import type { AuditLog } from "../audit/audit-log.js";
import type { IdentityService } from "../identity/identity-service.js";
import type { AccountRow, IdentityStore } from "../identity/identity-store.js";
import type { TenantContext } from "../platform/context.js";
import { isUniqueViolation } from "../platform/db.js";
import { forbidden, invalidFields, unauthenticated, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { IssuedSession, SessionIssuer } from "../sessions/session-issuer.js";
import type { OidcAttempt, OidcClient, OidcClientSettings, OidcIdentity } from "./oidc-client.js";
import type { SignInAttempts } from "./sign-in-attempts.js";
import { domainAllowed, type SsoSettings } from "./sso-config-rules.js";
import { tenantAttemptKey, type SsoConfigService, type TenantAttempt } from "./sso-config-service.js";

/** Spec 4.19's 200 body of the tenant callback. */
export interface SsoCallbackResult {
  userId: string;
  email: string;
  name: string;
  created: boolean;
  provider: "oidc";
}

/** The global sign-in's pending request: the OIDC attempt and where the browser goes afterwards. */
export interface GlobalAttempt extends OidcAttempt {
  returnTo: string;
}

/** The global sign-in's scopes: identity and e-mail are all it needs. */
export const GLOBAL_SCOPES = "openid email profile";

function globalAttemptKey(state: string): string {
  return `auth:oidc:{${state}}`;
}

function invalidState(): Error {
  return unauthenticated("The sign-in state is unknown, already used or expired: start the sign-in again", "SSO_INVALID_STATE");
}

/** What the provider said of the person's name, else the e-mail's local part. */
function displayName(identity: OidcIdentity): string {
  return (identity.name ?? identity.email.slice(0, identity.email.lastIndexOf("@"))).slice(0, 255) || identity.email;
}

/** A disabled or removed user is refused (spec 5.4), whichever way they arrive. */
function refuseInactive(user: AccountRow): void {
  if (user.deleted_at) throw forbidden("This user has been removed from the workspace", "USER_REMOVED");
  if (user.disabled) throw forbidden("This user is disabled", "USER_DISABLED");
}

/**
 * Completes sign-ins through an identity provider: the tenant's SSO callback (spec 4.19) and the
 * deployment's own provider (5.5, AUTH_OIDC_*). Both take their pending attempt exactly once before
 * any exchange, verify through the one OidcClient, and create nothing unless verification passed.
 */
export class SsoSignIn {
  constructor(
    private readonly db: Sequelize,
    private readonly identityStore: IdentityStore,
    private readonly identity: IdentityService,
    private readonly configs: SsoConfigService,
    private readonly oidc: OidcClient,
    private readonly attempts: SignInAttempts,
    private readonly sessions: SessionIssuer,
    private readonly audit: AuditLog,
  ) {}

  /**
   * GET /api/v1/sso/callback. `state` (`<tenantId>:<nonce>`) is the only source of the tenant. 400
   * without code or state and when the tenant has no oidcClientId; 401 for a bad state, a used or
   * expired nonce, a refused code or token; 403 for a disabled user, a domain not allowed, or an
   * unknown user without auto-provisioning. `returnTo` is where an attempt begun at the public start
   * route sends the browser; null for one begun by get_auth_url.
   */
  async tenantCallback(query: URLSearchParams, requestId: string): Promise<{ result: SsoCallbackResult; session: IssuedSession; returnTo: string | null }> {
    const state = query.get("state") ?? "";
    const missing: FieldViolation[] = [];
    if (!query.get("code") && !query.get("error")) missing.push({ field: "code", message: "is required" });
    if (!state) missing.push({ field: "state", message: "is required" });
    if (missing.length) throw invalidFields(missing);
    const at = state.indexOf(":");
    const tenantId = state.slice(0, at);
    if (at < 0 || !isUuid(tenantId)) throw invalidState();
    const { settings, client } = await this.configs.usable(tenantId);
    const attempt = await this.attempts.take<TenantAttempt>(tenantAttemptKey(tenantId, state.slice(at + 1)));
    if (!attempt) throw invalidState();
    const identity = await this.oidc.complete(client, query, state, attempt);
    const { user, created } = await this.tenantAccount(tenantId, settings, identity, requestId);
    const session = await this.sessions.issue({ tenantId, userId: user.id, role: user.role, tokenVersion: user.token_version });
    return { result: { userId: user.id, email: user.email, name: user.name, created, provider: "oidc" }, session, returnTo: attempt.returnTo ?? null };
  }

  /** GET /api/auth/signin/oidc: the provider's URL to send the browser to, and the state to pin in its cookie. */
  async startGlobal(client: OidcClientSettings, redirectUri: string, state: string, returnTo: string): Promise<string> {
    const { url, attempt } = await this.oidc.authorizationUrl(client, { redirectUri, scope: GLOBAL_SCOPES, state });
    const stored: GlobalAttempt = { ...attempt, returnTo };
    if (!(await this.attempts.put(globalAttemptKey(state), stored))) throw invalidState();
    return url;
  }

  /**
   * GET /api/auth/callback/oidc: `cookieState` is the state this browser was given at the start, so
   * a callback link made for someone else's sign-in does not sign this browser in.
   */
  async completeGlobal(client: OidcClientSettings, query: URLSearchParams, cookieState: string | null): Promise<{ session: IssuedSession; returnTo: string }> {
    const state = query.get("state") ?? "";
    if (!state || state !== cookieState) throw invalidState();
    const attempt = await this.attempts.take<GlobalAttempt>(globalAttemptKey(state));
    if (!attempt) throw invalidState();
    const identity = await this.oidc.complete(client, query, state, attempt);
    const user = await this.globalAccount(identity);
    const session = await this.sessions.issue({ tenantId: user.tenant_id, userId: user.id, role: user.role, tokenVersion: user.token_version });
    return { session, returnTo: attempt.returnTo };
  }

  /**
   * The tenant's user with this e-mail (for example one a directory provisioned), never a second
   * one; otherwise, with autoProvision and an allowed domain, a new verified user with defaultRole.
   */
  private async tenantAccount(tenantId: string, settings: SsoSettings, identity: OidcIdentity, requestId: string): Promise<{ user: AccountRow; created: boolean }> {
    const existing = await this.identityStore.findAccountByEmail(tenantId, identity.email);
    if (existing) {
      refuseInactive(existing);
      if (!existing.email_verified_at) await this.identityStore.markEmailVerified(tenantId, existing.id);
      return { user: existing, created: false };
    }
    if (!settings.autoProvision) {
      throw forbidden("No user with this e-mail address exists in the workspace, and automatic provisioning is off", "SSO_USER_NOT_PROVISIONED");
    }
    if (!domainAllowed(identity.email, settings.allowedDomains)) {
      throw forbidden("This e-mail address's domain is not allowed to join the workspace", "SSO_DOMAIN_NOT_ALLOWED");
    }
    const userId = newId();
    try {
      const user = await tenantWriteTransaction(this.db, tenantId, async (t) => {
        const row = await this.identityStore.insertVerifiedUser(tenantId, { id: userId, email: identity.email.toLowerCase(), name: displayName(identity), role: settings.defaultRole }, t);
        const ctx: TenantContext = { tenantId, userId, actorName: "sso", role: "admin", principal: { kind: "internal" }, requestId };
        await this.audit.record(t, ctx, {
          action: "create",
          entityType: "user",
          entityId: userId,
          entityName: null,
          before: null,
          after: { role: row.role, source: "sso" },
          entityVersion: null,
        });
        return row;
      });
      return { user, created: true };
    } catch (err) {
      // Two first sign-ins at once: the other one created the user; sign in as that user.
      if (!isUniqueViolation(err)) throw err;
      const user = await this.identityStore.findAccountByEmail(tenantId, identity.email);
      if (!user) throw err;
      refuseInactive(user);
      return { user, created: false };
    }
  }

  /**
   * The oldest account with this verified e-mail that may sign in; a disabled or removed one is
   * refused; nobody yet: a personal workspace, created under a per-address lock so that two first
   * sign-ins make one. Unverified accounts never match: whoever registered an address they could
   * not prove does not get the provider's sign-in.
   */
  private async globalAccount(identity: OidcIdentity): Promise<AccountRow> {
    return this.identityStore.transaction(async (t) => {
      await this.identityStore.lockEmail(t, identity.email);
      const accounts = await this.identityStore.verifiedAccountsByEmailAcrossTenants(identity.email, t);
      if (accounts.length) {
        const usable = accounts.find((a) => !a.disabled && !a.deleted_at);
        if (!usable) refuseInactive(accounts[0]);
        return usable!;
      }
      return this.identity.createPersonalWorkspace(t, { email: identity.email.toLowerCase(), name: displayName(identity) });
    });
  }
}

import { randomBytes } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import { PostSsoResponseSchema, type GetSsoRequest, type PostSsoRequest, type PostSsoResponse, type SsoConfig } from "../../gen/decisioning/v1/sso_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import type { OutboundConfig } from "../config.js";
import type { TenantContext } from "../platform/context.js";
import { badRequest, conflict, invalidField, invalidFields, type FieldViolation } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import { tenantKey } from "../platform/redis.js";
import { settingsKeyMissing, type SettingsCipher } from "../platform/settings-cipher.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { forbiddenAddresses } from "../notifications/outbound-guard.js";
import type { OidcClient, OidcClientSettings } from "./oidc-client.js";
import type { SignInAttempts } from "./sign-in-attempts.js";
import { applySsoPatch, isActive, providerUrlProblem, redirectUriProblem, secretProblem, type SsoSettings } from "./sso-config-rules.js";
import { toPatch, toSettings, toSsoConfigMessage, toWrite } from "./sso-config-mapper.js";
import type { SsoConfigRow, SsoConfigStore } from "./sso-config-store.js";
import { openSsoSecret, sealSsoSecret } from "./sso-secret.js";

/** The nonce half of a caller's `state` (`<tenantId>:<nonce>`): enough entropy to be unguessable. */
const NONCE = /^[A-Za-z0-9_-]{16,128}$/;

/** A fresh nonce for a tenant sign-in's state: 24 random bytes, base64url. */
export function newNonce(): string {
  return randomBytes(24).toString("base64url");
}

/** Where a tenant's pending sign-in waits for its callback (sign-in-attempts.ts). */
export function tenantAttemptKey(tenantId: string, nonce: string): string {
  return tenantKey(tenantId, "sso", "attempt", nonce);
}

/** A tenant's pending authorization request, as stored until its callback. */
export interface TenantAttempt {
  nonce: string;
  codeVerifier: string;
  redirectUri: string;
  /** Set by the public start route: the callback then redirects the browser here (a same-site path). */
  returnTo?: string;
}

/** What a signed-out page may offer for a tenant (GET /api/auth/providers). */
export interface TenantSignInOptions {
  sso: boolean;
  password: boolean;
}

/** The tenant's stored configuration with the decrypted client settings, when sign-in may use it. */
export interface UsableSsoConfig {
  settings: SsoSettings;
  client: OidcClientSettings;
}

/**
 * Spec 4.19 GET and POST /api/v1/sso (admin): the tenant's SSO configuration, with the OIDC client
 * secret write-only and stored encrypted, and the authorization URL whose state the callback
 * (sso-sign-in.ts) checks. Every change is audit-logged without the secret.
 */
export class SsoConfigService {
  constructor(
    private readonly db: Sequelize,
    private readonly store: SsoConfigStore,
    private readonly cipher: SettingsCipher,
    private readonly audit: AuditLog,
    private readonly oidc: OidcClient,
    private readonly attempts: SignInAttempts,
    private readonly outbound: OutboundConfig,
  ) {}

  async getSso(ctx: TenantContext, _req: GetSsoRequest): Promise<SsoConfig> {
    return toSsoConfigMessage(await this.store.get(ctx.tenantId));
  }

  async postSso(ctx: TenantContext, req: PostSsoRequest): Promise<PostSsoResponse> {
    if (req.action === "configure") return this.configure(ctx, req);
    if (req.action === "get_auth_url") return this.authUrl(ctx, req);
    throw invalidField("action", req.action ? `"${req.action}" is not an action: use configure or get_auth_url` : "is required: configure or get_auth_url");
  }

  /**
   * The configuration a sign-in may use: 400 when the tenant has none or no oidcClientId (spec 4.19),
   * and when it is disabled or SAML (reserved, never active).
   */
  async usable(tenantId: string): Promise<UsableSsoConfig> {
    const row = await this.store.get(tenantId);
    if (!row || !row.oidc_client_id) throw badRequest("SSO_NOT_CONFIGURED", "Single sign-on is not configured for this tenant: oidcClientId is not set");
    const settings = toSettings(row);
    if (!isActive(settings)) {
      throw badRequest("SSO_NOT_ACTIVE", settings.provider === "saml" ? "SAML single sign-on is reserved and not enabled" : "Single sign-on is disabled for this tenant");
    }
    return { settings, client: { issuer: settings.oidcIssuer, clientId: settings.oidcClientId, clientSecret: openSsoSecret(this.cipher, row) } };
  }

  /** `enforceForAllUsers` (2.12): the reason password sign-in is refused for the tenant's users, or null. */
  async passwordSignInRefusal(tenantId: string): Promise<string | null> {
    return (await this.signInOptions(tenantId)).password ? null : "This workspace requires single sign-on: sign in through its identity provider";
  }

  private async configure(ctx: TenantContext, req: PostSsoRequest): Promise<PostSsoResponse> {
    if (!req.config) throw invalidField("config", "is required with action configure");
    const secret = req.config.oidcClientSecret;
    const secretIssue = secret === undefined ? null : secretProblem(secret);
    const forbidden = forbiddenAddresses(this.outbound.allowPrivate);
    const s = await tenantWriteTransaction(this.db, ctx.tenantId, async (t) => {
      const stored = await this.store.get(ctx.tenantId, t, true);
      const { settings, violations } = applySsoPatch(stored ? toSettings(stored) : null, toPatch(req.config!), (url) =>
        providerUrlProblem(url, this.outbound.allowPrivate, forbidden),
      );
      if (secretIssue) violations.push({ field: "config.oidcClientSecret", message: secretIssue });
      if (violations.length) throw invalidFields(violations);
      const sealed = this.sealedSecret(ctx.tenantId, stored, secret);
      await this.store.upsert(t, toWrite(ctx.tenantId, settings, sealed));
      await this.audit.record(t, ctx, {
        action: stored ? "update" : "create",
        entityType: "sso_config",
        entityId: ctx.tenantId,
        entityName: "sso",
        before: stored ? auditView(toSettings(stored), stored.oidc_client_secret !== null) : null,
        after: auditView(settings, sealed !== null),
        entityVersion: null,
        changes: secret === undefined ? {} : { oidcClientSecret: secret === "" ? "cleared" : "replaced" },
      });
      return settings;
    });
    const message =
      s.provider === "saml"
        ? "SSO configuration saved; SAML is reserved and inactive: no sign-in flow is enabled"
        : isActive(s)
          ? "SSO configuration saved and active"
          : "SSO configuration saved; it is disabled";
    return create(PostSsoResponseSchema, { success: true, message });
  }

  /** undefined keeps the stored secret, "" clears it, anything else replaces it (sealed to the tenant). */
  private sealedSecret(tenantId: string, stored: SsoConfigRow | null, secret: string | undefined): { ciphertext: string; keyId: string } | null {
    if (secret === undefined) {
      return stored?.oidc_client_secret && stored.oidc_client_secret_key_id ? { ciphertext: stored.oidc_client_secret, keyId: stored.oidc_client_secret_key_id } : null;
    }
    if (secret === "") return null;
    if (!this.cipher.configured) throw settingsKeyMissing();
    return sealSsoSecret(this.cipher, tenantId, secret);
  }

  private async authUrl(ctx: TenantContext, req: PostSsoRequest): Promise<PostSsoResponse> {
    const violations: FieldViolation[] = [];
    const redirectIssue = req.redirectUri ? redirectUriProblem(req.redirectUri) : "is required with action get_auth_url";
    if (redirectIssue) violations.push({ field: "redirectUri", message: redirectIssue });
    let nonce: string;
    if (req.state) {
      // Spec 4.19 lets the caller choose the state; the callback's is `<tenantId>:<nonce>`, so a
      // state without this tenant's prefix is the nonce, and the prefix is added.
      const own = `${ctx.tenantId}:`;
      nonce = req.state.startsWith(own) ? req.state.slice(own.length) : req.state;
      if (!NONCE.test(nonce)) {
        violations.push({ field: "state", message: "must be a nonce of 16-128 letters, digits, - or _, optionally after <your tenant id>:" });
      }
    } else {
      nonce = newNonce();
    }
    if (violations.length) throw invalidFields(violations);
    return create(PostSsoResponseSchema, { authUrl: await this.startSignIn(ctx.tenantId, req.redirectUri, nonce) });
  }

  /**
   * The provider's authorization URL for a tenant sign-in, its attempt stored single-use under the
   * nonce: state `<tenantId>:<nonce>`, PKCE and an ID token nonce. Used by get_auth_url and by the
   * public start route (which passes `returnTo`). 400 when the tenant has no active configuration.
   */
  async startSignIn(tenantId: string, redirectUri: string, nonce: string, returnTo?: string): Promise<string> {
    const { settings, client } = await this.usable(tenantId);
    const state = `${tenantId}:${nonce}`;
    const { url, attempt } = await this.oidc.authorizationUrl(client, { redirectUri, scope: settings.oidcScopes, state });
    const stored: TenantAttempt = returnTo === undefined ? attempt : { ...attempt, returnTo };
    if (!(await this.attempts.put(tenantAttemptKey(tenantId, nonce), stored))) {
      throw conflict("STATE_IN_USE", "state: a sign-in with this nonce is already pending; use a new nonce");
    }
    return url;
  }

  /**
   * What a signed-out page may offer for `tenantId`: SSO when it has an active OIDC configuration,
   * password unless that configuration enforces SSO for everyone. An unknown or malformed id reads
   * like a tenant without SSO, so the answer reveals no tenant's existence.
   */
  async signInOptions(tenantId: string): Promise<TenantSignInOptions> {
    const row = isUuid(tenantId) ? await this.store.get(tenantId) : null;
    const settings = row ? toSettings(row) : null;
    const sso = settings !== null && isActive(settings);
    return { sso, password: !(sso && settings!.enforceForAllUsers) };
  }
}

/** What the audit log keeps of a configuration: everything but the secret, whose presence it notes. */
function auditView(s: SsoSettings, secretSet: boolean): Record<string, unknown> {
  return { ...s, oidcClientSecretSet: secretSet };
}


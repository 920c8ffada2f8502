import { createHash, randomBytes } from "node:crypto";
import type { AuditLog } from "../audit/audit-log.js";
import type { IdentityStore } from "../identity/identity-store.js";
import { IDENTITY_CHANNEL } from "../identity/identity-service.js";
import type { Authenticated } from "../identity/authenticator.js";
import type { Bus } from "../platform/bus.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { badRequest, forbidden, invalidField, invalidFields, unauthenticated, unavailable, type FieldViolation } from "../platform/errors.js";
import { isUuid, newId } from "../platform/ids.js";
import type { Logger } from "../platform/logger.js";
import {
  NAME_MAX_LENGTH,
  TENANT_NAME_MAX_LENGTH,
  defaultTenantName,
  displayNameViolations,
  emailViolations,
  normalizeEmail,
  passwordViolations,
} from "./account-rules.js";
import type { AccountMailer } from "./account-mail.js";
import type { AccountRow, AccountStore } from "./account-store.js";
import type { AuthTokenPurpose, AuthTokenStore } from "./auth-token-store.js";
import { hashPassword, verifyPassword } from "./password-hasher.js";
import type { PasswordSignInPolicy } from "./password-sign-in-policy.js";
import { SESSION_LIFETIME_SECONDS, type SessionIssuer } from "./session-issuer.js";
import type { SessionRevocations } from "./session-revocations.js";

/** How long a mailed link works (docs/sessions.md). */
export const VERIFY_EMAIL_TOKEN_HOURS = 24;
export const PASSWORD_RESET_TOKEN_MINUTES = 60;
/** A person in more memberships than this gets reset links for the most recently used ones only. */
const MAX_RESET_MAILS = 10;
const MAX_TOKEN_LENGTH = 200;

/** Who is signed in: the answer of sign-in and of GET /api/auth/session. */
export interface SessionView {
  user: { id: string; email: string; name: string };
  tenant: { id: string; name: string };
  role: string;
  expiresAt: string;
}

export interface SessionServiceDeps {
  identityStore: IdentityStore;
  accounts: AccountStore;
  tokens: AuthTokenStore;
  issuer: SessionIssuer;
  revocations: SessionRevocations;
  mailer: AccountMailer;
  bus: Bus;
  audit: AuditLog;
  /** Fills a new tenant's defaults in the transaction that creates it (as the CLI's tenant create does). */
  initializeTenant: (t: Transaction, ctx: TenantContext) => Promise<void>;
  passwordSignInPolicy: PasswordSignInPolicy;
  registrationEnabled: boolean;
  logger: Logger;
  now: () => number;
}

type Body = Record<string, unknown>;

function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

function systemContext(tenantId: string, userId: string | null, actorName: string, requestId: string): TenantContext {
  return { tenantId, userId, actorName, role: "admin", principal: { kind: "internal" }, requestId };
}

function sessionView(account: AccountRow, expiresAt: Date): SessionView {
  return {
    user: { id: account.id, email: account.email, name: account.name },
    tenant: { id: account.tenant_id, name: account.tenant_name },
    role: account.role,
    expiresAt: expiresAt.toISOString(),
  };
}

/**
 * Registration, e-mail verification, password sign-in and sign-out, and password reset
 * (spec 5.1, 5.4, 5.5; docs/sessions.md). No answer says whether an address is registered.
 */
export class SessionService {
  constructor(private readonly d: SessionServiceDeps) {}

  /**
   * A personal tenant whose owner is an admin, and a verification mail. An address that already has
   * an account gets the same answer, and its owner a mail (a fresh verification link if that account
   * was never verified), so registration cannot be used to probe for accounts.
   */
  async register(body: Body, requestId: string): Promise<{ email: string; verificationRequired: true }> {
    if (!this.d.registrationEnabled) throw forbidden("Self-registration is turned off on this deployment", "REGISTRATION_DISABLED");
    const violations: FieldViolation[] = [
      ...displayNameViolations(body.name, "name", NAME_MAX_LENGTH, true),
      ...emailViolations(body.email),
      ...passwordViolations(body.password),
      ...displayNameViolations(body.tenantName, "tenantName", TENANT_NAME_MAX_LENGTH, false),
    ];
    if (violations.length) throw invalidFields(violations);
    const email = normalizeEmail(body.email as string);
    const name = (body.name as string).trim();
    const tenantName = typeof body.tenantName === "string" && body.tenantName.trim() ? body.tenantName.trim() : defaultTenantName(name);
    // Hashed whether or not the address is taken, so both answers take the same time.
    const passwordHash = await hashPassword(body.password as string);
    const now = new Date(this.d.now());
    const { accounts, identityStore } = this.d;
    const outcome = await identityStore.transaction(async (t) => {
      await accounts.lockAddress(email, t);
      const [existing] = await accounts.findByEmailAcrossTenants(email, t);
      if (existing) {
        const token = existing.email_verified_at === null && existing.password_hash !== null ? await this.newToken(existing, "verify_email", t) : null;
        return { kind: "existing" as const, account: existing, token };
      }
      const tenantId = newId();
      const userId = newId();
      await identityStore.insertTenant(tenantId, tenantName, t);
      await identityStore.insertUser(tenantId, { id: userId, email, name, role: "admin" }, t);
      await accounts.setPasswordHash(tenantId, userId, passwordHash, t);
      const ctx = systemContext(tenantId, userId, name, requestId);
      await this.d.initializeTenant(t, ctx);
      await this.d.audit.record(t, ctx, {
        action: "create",
        entityType: "tenant",
        entityId: tenantId,
        entityName: tenantName,
        before: null,
        after: { name: tenantName, owner: userId, via: "self-registration" },
        entityVersion: null,
      });
      const account = (await accounts.find(tenantId, userId, t))!;
      return { kind: "created" as const, account, token: await this.newToken(account, "verify_email", t) };
    });
    const { account, token } = outcome;
    if (token) this.d.mailer.verification(account.tenant_id, account.email, account.name, token.id, token.value, VERIFY_EMAIL_TOKEN_HOURS);
    else this.d.mailer.alreadyRegistered(account.tenant_id, account.email, `auth:already_registered:${account.id}:${now.getTime()}`);
    return { email, verificationRequired: true };
  }

  /** Consumes a verification token (single use, expiring) and marks the address proven. */
  async verifyEmail(body: Body): Promise<{ verified: true; email: string }> {
    const token = this.tokenOf(body);
    const account = await this.d.identityStore.transaction(async (t) => {
      const row = await this.consume("verify_email", token, t);
      await this.d.accounts.markVerified(row.tenant_id, row.user_id, new Date(this.d.now()), t);
      return this.d.accounts.find(row.tenant_id, row.user_id, t);
    });
    return { verified: true, email: account!.email };
  }

  /**
   * Password sign-in. The membership is the body's `tenantId` when given, else the one used last
   * (then the newest). Wrong address and wrong password are one answer, and both pay one password
   * hash. Only with the right password does the person learn more (unverified, disabled, SSO only).
   */
  async signIn(body: Body): Promise<{ view: SessionView; setCookie: string }> {
    const violations = [...emailViolations(body.email)];
    if (typeof body.password !== "string" || body.password === "") violations.push({ field: "password", message: "is required" });
    else if (body.password.length > 1024) violations.push({ field: "password", message: "must be at most 1024 characters" });
    if (body.tenantId !== undefined && body.tenantId !== null && body.tenantId !== "" && (typeof body.tenantId !== "string" || !isUuid(body.tenantId))) {
      violations.push({ field: "tenantId", message: "must be a tenant id (a UUID)" });
    }
    if (violations.length) throw invalidFields(violations);
    const email = normalizeEmail(body.email as string);
    const wanted = typeof body.tenantId === "string" && body.tenantId ? body.tenantId : null;
    const candidates = (await this.d.accounts.findByEmailAcrossTenants(email)).filter((a) => a.password_hash !== null);
    const account = wanted ? candidates.find((a) => a.tenant_id === wanted) : candidates[0];
    const matches = await verifyPassword(account?.password_hash ?? null, body.password as string);
    if (!account || !matches) throw unauthenticated("Invalid e-mail address or password", "INVALID_CREDENTIALS");
    if (account.email_verified_at === null) {
      throw forbidden("This e-mail address is not verified yet: follow the link in the verification mail, then sign in", "EMAIL_NOT_VERIFIED");
    }
    if (account.disabled) throw forbidden("This account is disabled; an admin of the workspace can enable it", "USER_DISABLED");
    const refusal = await this.d.passwordSignInPolicy.refusal(account.tenant_id);
    if (refusal !== null) throw forbidden(refusal, "PASSWORD_SIGN_IN_DISABLED");
    const issued = await this.d.issuer.issue({ tenantId: account.tenant_id, userId: account.id, role: account.role, tokenVersion: account.token_version });
    await this.d.accounts.recordSignIn(account.tenant_id, account.id, new Date(this.d.now()));
    return { view: sessionView(account, issued.expiresAt), setCookie: issued.setCookie };
  }

  /**
   * Ends the session on the server too: its id is refused on every process until no copy of the
   * cookie (renewed ones included, at most one lifetime from now) can still be valid. Only the
   * token's signature and expiry are checked, so a disabled user can still sign out.
   */
  async signOut(token: string | null): Promise<void> {
    const claims = token ? await this.d.issuer.verify(token) : null;
    if (!claims) return;
    try {
      await this.d.revocations.revoke(claims.tenantId, claims.sid, SESSION_LIFETIME_SECONDS * 1000);
    } catch (err) {
      this.d.logger.error({ err }, "session revocation failed");
      throw unavailable("SESSION_STORE_UNAVAILABLE", "The session could not be ended on the server; try again shortly");
    }
  }

  /** GET /api/auth/session: who, which tenant, which role, and when the session (as renewed) expires. */
  async describe(auth: Authenticated): Promise<SessionView> {
    if (auth.principal.kind !== "session") throw unauthenticated("No session: sign in first", "NO_SESSION");
    const account = await this.d.accounts.find(auth.tenantId, auth.principal.userId);
    if (!account) throw unauthenticated("Unauthorized: the user behind this session is removed", "USER_INACTIVE");
    return sessionView(account, auth.principal.expiresAt);
  }

  /**
   * Mails a reset link to each live, enabled membership of the address (each link names its
   * workspace). The answer is the same whether or not there was any.
   */
  async requestPasswordReset(body: Body): Promise<{ accepted: true }> {
    const violations = emailViolations(body.email);
    if (violations.length) throw invalidFields(violations);
    const email = normalizeEmail(body.email as string);
    const accounts = (await this.d.accounts.findByEmailAcrossTenants(email)).filter((a) => !a.disabled).slice(0, MAX_RESET_MAILS);
    for (const account of accounts) {
      const token = await this.d.identityStore.transaction((t) => this.newToken(account, "password_reset", t));
      this.d.mailer.passwordReset(account.tenant_id, account.email, account.tenant_name, token.id, token.value, PASSWORD_RESET_TOKEN_MINUTES);
    }
    return { accepted: true };
  }

  /**
   * Sets the new password with a reset token (single use, expiring). It bumps tokenVersion, so every
   * session and key of the user ends at once on every process, and retires the user's other reset links.
   */
  async confirmPasswordReset(body: Body, requestId: string): Promise<{ reset: true }> {
    const token = this.tokenOf(body);
    const violations = passwordViolations(body.password);
    if (violations.length) throw invalidFields(violations);
    const passwordHash = await hashPassword(body.password as string);
    const now = new Date(this.d.now());
    const user = await this.d.identityStore.transaction(async (t) => {
      const row = await this.consume("password_reset", token, t);
      const updated = await this.d.accounts.resetPassword(row.tenant_id, row.user_id, passwordHash, now, t);
      if (!updated) throw badRequest("LINK_INVALID", "token: this link is no longer valid; ask for a new one");
      await this.d.tokens.retireOthers(row.tenant_id, row.user_id, "password_reset", now, t);
      await this.d.audit.record(t, systemContext(row.tenant_id, updated.id, updated.name, requestId), {
        action: "update",
        entityType: "user",
        entityId: updated.id,
        entityName: updated.name,
        before: null,
        after: null,
        entityVersion: null,
        changes: { password: "reset by mail" },
      });
      return updated;
    });
    await this.d.bus.publish(IDENTITY_CHANNEL, `user:${user.tenant_id}:${user.id}`, { confirmed: true });
    return { reset: true };
  }

  private tokenOf(body: Body): string {
    const token = body.token;
    if (typeof token !== "string" || token.trim() === "") throw invalidField("token", "is required");
    if (token.length > MAX_TOKEN_LENGTH) throw badRequest("LINK_INVALID", "token: this link is not valid");
    return token.trim();
  }

  /** The token's row, used up now; a reused, expired or unknown token is 400 saying which. */
  private async consume(purpose: AuthTokenPurpose, token: string, t: Transaction) {
    const hash = tokenHash(token);
    const row = await this.d.tokens.consumeAcrossTenants(purpose, hash, new Date(this.d.now()), t);
    if (row) return row;
    const known = await this.d.tokens.findAcrossTenants(purpose, hash);
    if (known?.used_at) throw badRequest("LINK_USED", "token: this link has already been used");
    if (known) throw badRequest("LINK_EXPIRED", "token: this link has expired; ask for a new one");
    throw badRequest("LINK_INVALID", "token: this link is not valid");
  }

  private async newToken(account: AccountRow, purpose: AuthTokenPurpose, t: Transaction): Promise<{ id: string; value: string }> {
    const value = randomBytes(32).toString("base64url");
    const id = newId();
    const lifetimeMs = purpose === "verify_email" ? VERIFY_EMAIL_TOKEN_HOURS * 3_600_000 : PASSWORD_RESET_TOKEN_MINUTES * 60_000;
    await this.d.tokens.insert(
      account.tenant_id,
      { id, user_id: account.id, purpose, token_hash: tokenHash(value), expires_at: new Date(this.d.now() + lifetimeMs) },
      t,
    );
    return { id, value };
  }
}

import { create } from "@bufbuild/protobuf";
import { timestampDate, EmptySchema, type Empty } from "@bufbuild/protobuf/wkt";
import {
  IssueTokenResponseSchema,
  ListApiKeysResponseSchema,
  ListOAuthClientsResponseSchema,
  type CreateApiKeyRequest,
  type CreateApiKeyResponse,
  type CreateOAuthClientRequest,
  type CreateOAuthClientResponse,
  type IssueTokenRequest,
  type IssueTokenResponse,
  type ListApiKeysRequest,
  type ListApiKeysResponse,
  type ListOAuthClientsRequest,
  type ListOAuthClientsResponse,
  type RevokeApiKeyRequest,
  type RevokeOAuthClientRequest,
} from "../../gen/decisioning/v1/identity_pb.js";
import type { RateLimitOverride } from "../config.js";
import { charCount } from "../core/char-count.js";
import type { TenantContext, RoleName } from "../platform/context.js";
import { AppError, conflict, forbidden, invalidField, invalidFields, notFound, type FieldViolation } from "../platform/errors.js";
import { hmacSha256Hex, randomHex, safeEqual } from "../platform/crypto.js";
import { newId, isUuid } from "../platform/ids.js";
import type { Secrets } from "../platform/secrets.js";
import type { Bus } from "../platform/bus.js";
import type { AccountRow, IdentityStore, UserRow } from "./identity-store.js";
import { isUniqueViolation, type Transaction } from "../platform/db.js";
import { TokenSigner, TOKEN_LIFETIME_SECONDS } from "./token-signer.js";
import { toApiKeySummary, toCreatedApiKey, toCreatedOAuthClient, toOAuthClientSummary } from "./identity-mapper.js";

export const API_KEY_SCOPES = ["control-plane", "scim"] as const;
export const OAUTH_SCOPES = ["read", "write", "admin"] as const;
export const OAUTH_CLIENT_LIST_MAX = 1000;
/** Cross-process cache invalidation for credentials (authenticator.ts listens). */
export const IDENTITY_CHANNEL = "identity.invalidate";

/** API-key and OAuth-client names, in characters (code points), as offer names (spec 2.4). */
const MAX_NAME = 255;
const MAX_REASON = 1000;

/** Spec 4.1: unknown scopes are dropped; nothing left (or nothing given) means [read]. */
export function normalizeOAuthScopes(requested: string[]): string[] {
  const kept = OAUTH_SCOPES.filter((s) => requested.includes(s));
  return kept.length > 0 ? [...kept] : ["read"];
}

/** Spec 4.1: admin scope gives admin, write gives editor, otherwise viewer. */
export function roleForOAuthScopes(scopes: string[]): RoleName {
  if (scopes.includes("admin")) return "admin";
  if (scopes.includes("write")) return "editor";
  return "viewer";
}

export function hashApiKey(pepper: string, rawKey: string): string {
  return hmacSha256Hex(pepper, rawKey);
}

function oauthError(reason: "INVALID_REQUEST" | "UNSUPPORTED_GRANT_TYPE" | "INVALID_CLIENT", message: string): AppError {
  return new AppError({ code: reason === "INVALID_CLIENT" ? "UNAUTHENTICATED" : "INVALID_ARGUMENT", reason, message });
}

/** API keys, OAuth clients and tokens (spec 4.1, 4.2), plus the bootstrap operations the CLI exposes. */
export class IdentityService {
  private readonly signer: TokenSigner;

  constructor(
    private readonly store: IdentityStore,
    private readonly secrets: Secrets,
    private readonly bus: Bus,
    /** Fills a new tenant's defaults (outcome types, ...) in the same transaction as the tenant. */
    private readonly initializeTenant: (t: Transaction, ctx: TenantContext) => Promise<void> = async () => {},
  ) {
    this.signer = new TokenSigner(secrets);
  }

  // ---- API keys -------------------------------------------------------------------------

  async createApiKey(ctx: TenantContext, req: CreateApiKeyRequest): Promise<CreateApiKeyResponse> {
    const violations: FieldViolation[] = [];
    const name = req.name.trim();
    if (!name) violations.push({ field: "name", message: "is required" });
    else if (charCount(name) > MAX_NAME) violations.push({ field: "name", message: `must be at most ${MAX_NAME} characters` });
    const unknown = req.scopes.filter((s) => !(API_KEY_SCOPES as readonly string[]).includes(s));
    if (unknown.length) {
      violations.push({ field: "scopes", message: `unknown scope "${unknown[0]}" (allowed: ${API_KEY_SCOPES.join(", ")})` });
    }
    const expiresAt = req.expiresAt ? timestampDate(req.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now()) violations.push({ field: "expiresAt", message: "must be in the future" });
    if (violations.length) throw invalidFields(violations);
    const userId = await this.actingUser(ctx);
    const raw = `krn_${randomHex(32)}`;
    const row = await this.store.insertApiKey(ctx.tenantId, {
      id: newId(),
      user_id: userId,
      name,
      prefix: raw.slice(0, 12),
      key_hash: hashApiKey(this.secrets.apiKeyPepper(), raw),
      scopes: [...new Set(req.scopes)],
      expires_at: expiresAt,
    });
    return toCreatedApiKey(row, raw);
  }

  async listApiKeys(ctx: TenantContext, req: ListApiKeysRequest): Promise<ListApiKeysResponse> {
    const rows = await this.store.listApiKeys(ctx.tenantId, req.includeRevoked);
    return create(ListApiKeysResponseSchema, { data: rows.map(toApiKeySummary), total: rows.length });
  }

  async revokeApiKey(ctx: TenantContext, req: RevokeApiKeyRequest): Promise<Empty> {
    if (!req.id) throw invalidField("id", "is required");
    if (req.reason.length > MAX_REASON) throw invalidField("reason", `must be at most ${MAX_REASON} characters`);
    const row = isUuid(req.id) ? await this.store.revokeApiKey(ctx.tenantId, req.id, req.reason || null) : null;
    if (!row) throw notFound("API key", req.id);
    await this.bus.publish(IDENTITY_CHANNEL, `key:${row.key_hash}`, { confirmed: true });
    return create(EmptySchema);
  }

  /**
   * A key acts as the user who minted it; an OAuth client mints as the admin who created it (its
   * row's `created_by`), checked now, since the client outlives its creator's role. The internal
   * server key has no user, so it cannot mint.
   */
  private async actingUser(ctx: TenantContext): Promise<string> {
    if (ctx.userId) return ctx.userId;
    if (ctx.principal.kind !== "oauth_client") {
      throw forbidden("API keys are minted by a user: the internal server key is an infrastructure credential; use an admin's control-plane key or an admin OAuth token");
    }
    const creatorId = await this.store.oauthClientCreator(ctx.tenantId, ctx.principal.clientId);
    const creator = creatorId ? await this.store.findUser(ctx.tenantId, creatorId) : null;
    if (!creator || creator.disabled || creator.deleted_at) {
      throw forbidden("This OAuth client mints API keys and OAuth clients as the user who created it, and that user is unknown, disabled or removed: create a new client as an admin");
    }
    if (creator.role !== "admin") {
      throw forbidden(`This OAuth client mints API keys and OAuth clients as the user who created it, who is no longer an admin (role ${creator.role})`);
    }
    return creator.id;
  }

  // ---- OAuth clients and tokens -------------------------------------------------------------

  async createOAuthClient(ctx: TenantContext, req: CreateOAuthClientRequest): Promise<CreateOAuthClientResponse> {
    // Spec 5.1 rule 6: a client is refused, not created unable to get a token, without the signing secret.
    this.secrets.jwtSigningSecret();
    const name = req.name.trim() || `oauth-client-${Date.now()}`;
    if (charCount(name) > MAX_NAME) throw invalidField("name", `must be at most ${MAX_NAME} characters`);
    const clientId = `kci_${randomHex(16)}`;
    const secret = `kcs_${randomHex(32)}`;
    const row = await this.store.insertOAuthClient(ctx.tenantId, {
      id: newId(),
      name,
      client_id: clientId,
      secret_hash: hmacSha256Hex(this.secrets.apiKeyPepper(), secret),
      scopes: normalizeOAuthScopes(req.scopes),
      // A client made with another client's token stands for the same admin, who must still be one,
      // as for a key: otherwise a demoted admin's client could mint itself fresh admin clients.
      created_by: ctx.userId ?? (ctx.principal.kind === "oauth_client" ? await this.actingUser(ctx) : null),
    });
    return toCreatedOAuthClient(row, secret);
  }

  async listOAuthClients(ctx: TenantContext, req: ListOAuthClientsRequest): Promise<ListOAuthClientsResponse> {
    const { rows, total } = await this.store.listOAuthClients(ctx.tenantId, OAUTH_CLIENT_LIST_MAX, req.includeRevoked);
    // Spec 4.1 shows at most 1000; `total` counts them all, so a caller can tell rows were left out.
    return create(ListOAuthClientsResponseSchema, { data: rows.map(toOAuthClientSummary), total });
  }

  async revokeOAuthClient(ctx: TenantContext, req: RevokeOAuthClientRequest): Promise<Empty> {
    if (!req.id) throw invalidField("id", "is required");
    const row = isUuid(req.id) ? await this.store.revokeOAuthClient(ctx.tenantId, req.id) : null;
    if (!row) throw notFound("OAuth client", req.id);
    await this.bus.publish(IDENTITY_CHANNEL, `client:${row.client_id}`, { confirmed: true });
    return create(EmptySchema);
  }

  /** The client_credentials grant. Errors carry the OAuth reasons the REST door renders per spec 7 item 4. */
  async issueToken(_ctx: TenantContext, req: IssueTokenRequest): Promise<IssueTokenResponse> {
    if (!req.grantType) throw oauthError("INVALID_REQUEST", "grant_type is required");
    if (req.grantType !== "client_credentials") {
      throw oauthError("UNSUPPORTED_GRANT_TYPE", `grant_type "${req.grantType}" is not supported; use client_credentials`);
    }
    if (!req.clientId || !req.clientSecret) throw oauthError("INVALID_REQUEST", "client_id and client_secret are required");
    const pepper = this.secrets.apiKeyPepper();
    const client = await this.store.findOAuthClientAcrossTenants(req.clientId);
    const presented = hmacSha256Hex(pepper, req.clientSecret);
    // Compare even when the client is unknown, so timing does not reveal which client ids exist.
    const matches = safeEqual(presented, client?.secret_hash ?? "0".repeat(64));
    if (!client || client.revoked_at || !matches) throw oauthError("INVALID_CLIENT", "Invalid or revoked client credentials");
    const accessToken = await this.signer.sign({
      sub: client.client_id,
      tid: client.tenant_id,
      role: roleForOAuthScopes(client.scopes),
      scopes: client.scopes,
    });
    return create(IssueTokenResponseSchema, {
      accessToken,
      tokenType: "Bearer",
      expiresIn: TOKEN_LIFETIME_SECONDS,
      scope: client.scopes.join(" "),
    });
  }

  // ---- Bootstrap (CLI) ------------------------------------------------------------------------

  /**
   * A new tenant with an admin user and a control-plane key acting as that user. `platformOwner`
   * (the CLI's --platform-owner) is refused with 409 when another tenant already is it.
   */
  async createTenant(name: string, options: { platformOwner?: boolean } = {}): Promise<{ tenantId: string; userId: string; apiKey: string }> {
    if (!name.trim()) throw invalidField("name", "is required");
    const tenantId = newId();
    const userId = newId();
    const apiKey = `krn_${randomHex(32)}`;
    const keyHash = hashApiKey(this.secrets.apiKeyPepper(), apiKey);
    await this.store.transaction(async (t) => {
      await this.store.insertTenant(tenantId, name.trim(), t, options.platformOwner).catch((err) => {
        if (options.platformOwner && isUniqueViolation(err)) throw conflict("PLATFORM_OWNER_EXISTS", "another tenant is already the platform owner");
        throw err;
      });
      await this.store.insertUser(tenantId, { id: userId, email: `admin@${tenantId}.local`, name: "admin", role: "admin" }, t);
      await this.store.insertApiKey(
        tenantId,
        { id: newId(), user_id: userId, name: "bootstrap", prefix: apiKey.slice(0, 12), key_hash: keyHash, scopes: ["control-plane"], expires_at: null },
        t,
      );
      await this.initializeTenant(t, {
        tenantId,
        userId: null,
        actorName: "system",
        role: "admin",
        principal: { kind: "internal" },
        requestId: `tenant-create-${tenantId}`,
      });
    });
    return { tenantId, userId, apiKey };
  }

  /**
   * Spec 5.3, 5.5: a personal workspace (display name `<Name>'s Workspace` unless given) whose owner
   * is its admin, inside the caller's transaction. The owner arrives verified from an identity
   * provider; sign-in holds no API key, so none is made.
   */
  async createPersonalWorkspace(t: Transaction, owner: { email: string; name: string }, tenantName?: string): Promise<AccountRow> {
    const tenantId = newId();
    await this.store.insertTenant(tenantId, (tenantName ?? `${owner.name}'s Workspace`).slice(0, MAX_NAME), t);
    const user = await this.store.insertVerifiedUser(tenantId, { id: newId(), email: owner.email, name: owner.name, role: "admin" }, t);
    await this.initializeTenant(t, {
      tenantId,
      userId: user.id,
      actorName: user.name,
      role: "admin",
      principal: { kind: "internal" },
      requestId: `workspace-create-${tenantId}`,
    });
    return user;
  }

  /** A user with a control-plane key acting as them (their role decides what it may do). */
  async createUser(tenantId: string, email: string, role: RoleName, name?: string): Promise<{ userId: string; apiKey: string }> {
    if (!isUuid(tenantId) || !(await this.store.findTenant(tenantId))) throw invalidField("tenant", `unknown tenant ${tenantId}`);
    if (!email.includes("@")) throw invalidField("email", "must be an e-mail address");
    const userId = newId();
    const apiKey = `krn_${randomHex(32)}`;
    const keyHash = hashApiKey(this.secrets.apiKeyPepper(), apiKey);
    await this.store
      .transaction(async (t) => {
        await this.store.insertUser(tenantId, { id: userId, email, name: name ?? email, role }, t);
        await this.store.insertApiKey(
          tenantId,
          { id: newId(), user_id: userId, name: `${email} key`, prefix: apiKey.slice(0, 12), key_hash: keyHash, scopes: ["control-plane"], expires_at: null },
          t,
        );
      })
      .catch((err) => {
        throw isUniqueViolation(err) ? conflict("EMAIL_TAKEN", `email: ${email} is already a user of this tenant`) : err;
      });
    return { userId, apiKey };
  }

  /** Replaces the tenant's rate-limit overrides (bucket → limit and window); running processes apply them within 30 seconds. */
  async setTenantRateLimits(tenantId: string, limits: Record<string, RateLimitOverride>): Promise<void> {
    const row = isUuid(tenantId) ? await this.store.setTenantRateLimits(tenantId, limits) : null;
    if (!row) throw notFound("tenant", tenantId);
  }

  /** Role and disabled changes bump tokenVersion, so live sessions and keys re-check (spec 5.4). */
  async updateUser(tenantId: string, userId: string, change: { role?: RoleName; disabled?: boolean }): Promise<UserRow> {
    const row = isUuid(tenantId) && isUuid(userId) ? await this.store.updateUser(tenantId, userId, change) : null;
    if (!row) throw notFound("user", userId);
    await this.bus.publish(IDENTITY_CHANNEL, `user:${tenantId}:${userId}`, { confirmed: true });
    return row;
  }
}


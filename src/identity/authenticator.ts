import type { CallInfo, Principal, RoleName } from "../platform/context.js";
import { roleAtLeast } from "../platform/context.js";
import { isAppError, forbidden, unauthenticated, invalidField } from "../platform/errors.js";
import { safeEqual } from "../platform/crypto.js";
import { setNewest } from "../core/bounded-map.js";
import { isUuid } from "../platform/ids.js";
import { TtlCache } from "../platform/ttl-cache.js";
import type { Secrets } from "../platform/secrets.js";
import type { Bus } from "../platform/bus.js";
import type { Logger } from "../platform/logger.js";
import type { ResolvedPolicy } from "../platform/method-policy.js";
import type { ApiKeyRow, IdentityStore, OAuthClientRow, UserRow } from "./identity-store.js";
import { IDENTITY_CHANNEL, hashApiKey, roleForOAuthScopes } from "./identity-service.js";
import { TokenSigner } from "./token-signer.js";
import { SESSION_LIFETIME_SECONDS, sessionTokenOf, type SessionIssuer } from "../sessions/session-issuer.js";
import type { SessionRevocations } from "../sessions/session-revocations.js";

/** Spec 5.4: liveness data may be at most 30 seconds old. */
export const LIVENESS_CACHE_MS = 30_000;
const TOUCH_INTERVAL_MS = 60_000;
/** Valid API keys whose HMAC this process keeps (the oldest goes first); as many as the key cache holds. */
const KEY_HASHES = 10_000;

export interface Authenticated {
  tenantId: string;
  userId: string | null;
  actorName: string;
  role: RoleName;
  principal: Principal;
  /** A renewed session cookie (a Set-Cookie value) that the door sends back with its answer. */
  setCookie?: string;
}

/** What checks a session cookie: its signature and expiry, and whether it was signed out. */
export interface SessionChecks {
  issuer: SessionIssuer;
  revocations: SessionRevocations;
}

/**
 * Establishes who is calling (spec 5.1) from the request headers, with live re-checks (5.4) cached
 * at most 30 seconds and failing closed. Revocations also clear the caches of every process at once
 * through the bus.
 */
export class Authenticator {
  private readonly keys: TtlCache<ApiKeyRow | null>;
  private readonly users: TtlCache<UserRow | null>;
  private readonly clients: TtlCache<OAuthClientRow | null>;
  private readonly tenants: TtlCache<boolean>;
  private readonly signer: TokenSigner;
  private readonly lastTouched = new Map<string, number>();
  /**
   * The HMAC of each valid API key as presented, computed once per process rather than on every
   * request (it was a twentieth of a replayed Respond's CPU). Keeping a presented key in memory
   * widens nothing: each HTTP/2 connection's HPACK table already holds it as long as the connection
   * lives. Only keys that matched a row are kept, so a caller sending random keys cannot fill it;
   * whether a kept key is still live is checked as before, against the key cache.
   */
  private readonly keyHashes = new Map<string, string>();

  constructor(
    private readonly store: IdentityStore,
    private readonly secrets: Secrets,
    private readonly internalApiKey: string | null,
    private readonly logger: Logger,
    /** The clock of the caches and expiry checks; tests pass their own to cross the 30 seconds. */
    private readonly now: () => number = Date.now,
    /** Null: session cookies are not accepted (tests of other credentials build it so). */
    private readonly sessions: SessionChecks | null = null,
  ) {
    this.signer = new TokenSigner(secrets);
    this.keys = new TtlCache(LIVENESS_CACHE_MS, undefined, now);
    this.users = new TtlCache(LIVENESS_CACHE_MS, undefined, now);
    this.clients = new TtlCache(LIVENESS_CACHE_MS, undefined, now);
    this.tenants = new TtlCache(LIVENESS_CACHE_MS, undefined, now);
  }

  /** Subscribes to revocations so that they take effect at once on this process. */
  async listen(bus: Bus): Promise<void> {
    await bus.subscribe(IDENTITY_CHANNEL, (message) => {
      const [kind, ...rest] = message.split(":");
      if (kind === "key") this.keys.delete(rest.join(":"));
      else if (kind === "client") this.clients.delete(rest.join(":"));
      else if (kind === "user") this.users.delete(rest.join(":"));
    });
  }

  async authenticate(call: CallInfo): Promise<Authenticated> {
    const apiKey = call.header("x-api-key");
    const authorization = call.header("authorization");
    if (apiKey) return this.fromApiKey(apiKey, call);
    if (authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
      if (!match) throw unauthenticated("Authorization must be 'Bearer <access token>'");
      if (match[1].startsWith("krn_")) {
        throw unauthenticated("API keys are sent in the X-API-Key header, not as a Bearer token", "API_KEY_AS_BEARER");
      }
      return this.fromAccessToken(match[1]);
    }
    const session = this.sessions ? sessionTokenOf(call.header("cookie")) : null;
    if (session) return this.fromSession(session);
    throw unauthenticated("Missing credentials: send X-API-Key, Authorization: Bearer <token>, or sign in", "MISSING_CREDENTIALS");
  }

  /**
   * Spec 5.1 and 5.4: a valid, unexpired token that was not signed out, of a live user whose
   * tokenVersion it still carries. In the second half of its life it is renewed (same sid).
   */
  private async fromSession(token: string): Promise<Authenticated> {
    const { issuer, revocations } = this.sessions!;
    const claims = await issuer.verify(token);
    if (!claims) throw unauthenticated("Unauthorized: the session is invalid or has expired; sign in again", "SESSION_INVALID");
    if (await this.live(() => revocations.isRevoked(claims.tenantId, claims.sid))) {
      throw unauthenticated("Unauthorized: this session was signed out; sign in again", "SESSION_ENDED");
    }
    const user = await this.liveUser(claims.tenantId, claims.userId);
    if (user.token_version !== claims.tokenVersion) {
      throw unauthenticated("Unauthorized: the user's role, status or password changed; sign in again", "SESSION_ENDED");
    }
    let expiresAt = claims.expiresAt;
    let setCookie: string | undefined;
    if (expiresAt.getTime() - this.now() < (SESSION_LIFETIME_SECONDS * 1000) / 2) {
      const renewed = await issuer.issue({ tenantId: user.tenant_id, userId: user.id, role: user.role, tokenVersion: user.token_version }, claims.sid);
      expiresAt = renewed.expiresAt;
      setCookie = renewed.setCookie;
    }
    return {
      tenantId: user.tenant_id,
      userId: user.id,
      actorName: user.name,
      role: user.role,
      principal: { kind: "session", sid: claims.sid, userId: user.id, expiresAt },
      setCookie,
    };
  }

  /**
   * Spec 5.1's one exception to rule 1: the SCIM routes take an API key as `Authorization: Bearer`,
   * and only a live key with the `scim` scope. Every other credential (X-API-Key, an OAuth token, a
   * key without the scope) is 401 there, so a directory's key is the only way in.
   */
  async authenticateScim(call: CallInfo): Promise<Authenticated> {
    const match = /^Bearer\s+(krn_\S+)\s*$/i.exec(call.header("authorization") ?? "");
    if (call.header("x-api-key") || !match) {
      throw unauthenticated("SCIM requests authenticate with Authorization: Bearer <API key with the scim scope>", "SCIM_KEY_REQUIRED");
    }
    const auth = await this.fromApiKey(match[1], call);
    if (auth.principal.kind !== "api_key" || !auth.principal.scopes.includes("scim")) {
      throw unauthenticated("This API key does not have the scim scope", "SCIM_SCOPE_REQUIRED");
    }
    return auth;
  }

  private async fromApiKey(raw: string, call: CallInfo): Promise<Authenticated> {
    if (this.internalApiKey && safeEqual(raw, this.internalApiKey)) return this.internal(call);
    if (!raw.startsWith("krn_")) throw unauthenticated("Invalid API key", "INVALID_API_KEY");
    const kept = this.keyHashes.get(raw);
    const hash = kept ?? hashApiKey(this.secrets.apiKeyPepper(), raw);
    const key = await this.cached(this.keys, hash, () => this.store.findApiKeyByHashAcrossTenants(hash));
    if (!key || key.revoked_at || (key.expires_at && key.expires_at.getTime() <= this.now())) {
      throw unauthenticated("Invalid, revoked or expired API key", "INVALID_API_KEY");
    }
    if (kept === undefined) setNewest(this.keyHashes, raw, hash, KEY_HASHES);
    const user = await this.liveUser(key.tenant_id, key.user_id);
    this.touch(key);
    return {
      tenantId: key.tenant_id,
      userId: user.id,
      actorName: user.name,
      role: user.role,
      principal: { kind: "api_key", keyId: key.id, userId: user.id, scopes: key.scopes },
    };
  }

  /** Spec 5.1 rule 4: the internal key names its tenant with X-Tenant-Id. */
  private async internal(call: CallInfo): Promise<Authenticated> {
    const tenantId = call.header("x-tenant-id");
    if (!tenantId) throw invalidField("X-Tenant-Id", "is required with the internal server key");
    const exists = isUuid(tenantId) && (await this.cached(this.tenants, tenantId, async () => (await this.store.findTenant(tenantId)) !== null));
    if (!exists) throw invalidField("X-Tenant-Id", `unknown tenant ${tenantId}`);
    return { tenantId, userId: null, actorName: "system", role: "admin", principal: { kind: "internal" } };
  }

  private async fromAccessToken(token: string): Promise<Authenticated> {
    const claims = await this.signer.verify(token);
    const client = await this.cached(this.clients, claims.sub, () => this.store.findOAuthClientAcrossTenants(claims.sub));
    if (!client || client.revoked_at || client.tenant_id !== claims.tid) {
      throw unauthenticated("The OAuth client of this token has been revoked", "CLIENT_REVOKED");
    }
    return {
      tenantId: client.tenant_id,
      userId: null,
      actorName: `oauth-client:${client.name}`,
      role: roleForOAuthScopes(client.scopes),
      principal: { kind: "oauth_client", clientId: client.client_id, scopes: client.scopes },
    };
  }

  private async liveUser(tenantId: string, userId: string): Promise<UserRow> {
    const user = await this.cached(this.users, `${tenantId}:${userId}`, () => this.store.findUser(tenantId, userId));
    if (!user || user.disabled || user.deleted_at) throw unauthenticated("Unauthorized: the user behind this credential is disabled or removed", "USER_INACTIVE");
    return user;
  }

  /**
   * A liveness lookup through its cache: a fresh hit as it is, with no promise for the request path
   * to wait on (TtlCache.peek), otherwise the load, failing closed.
   */
  private cached<V>(cache: TtlCache<V>, key: string, load: () => Promise<V>): V | Promise<V> {
    return cache.peek(key) ?? this.live(() => cache.get(key, load));
  }

  /** Fail closed: a lookup that cannot be made rejects the request (spec 5.4). */
  private async live<T>(lookup: () => Promise<T>): Promise<T> {
    try {
      return await lookup();
    } catch (err) {
      if (isAppError(err)) throw err;
      this.logger.error({ err }, "credential lookup failed; rejecting");
      throw unauthenticated("Unauthorized: credentials could not be verified", "LIVENESS_CHECK_FAILED");
    }
  }

  /** last_used_at at most once a minute per key per process, off the request path. */
  private touch(key: ApiKeyRow): void {
    const now = this.now();
    if ((this.lastTouched.get(key.id) ?? 0) > now - TOUCH_INTERVAL_MS) return;
    this.lastTouched.set(key.id, now);
    this.store.touchApiKey(key.tenant_id, key.id).catch((err) => this.logger.warn({ err }, "last-used update failed"));
  }
}

/** Spec 5.2 and 5.3: planes, scopes and roles. Public methods are not authorized here. */
export function authorize(auth: Authenticated, policy: Pick<ResolvedPolicy, "plane" | "minRole">): void {
  if (policy.plane !== "control") return;
  if (auth.principal.kind === "api_key" && !auth.principal.scopes.includes("control-plane")) {
    throw forbidden(
      "This API key is scoped to the data plane (recommend, respond, respond/bulk, capture); control-plane routes need a key with the control-plane scope",
      "DATA_PLANE_KEY",
    );
  }
  if (!roleAtLeast(auth.role, policy.minRole)) {
    throw forbidden(`This route requires the ${policy.minRole} role; the caller has ${auth.role}`, "INSUFFICIENT_ROLE");
  }
}

import type { Sequelize } from "sequelize";
import { selectRows, execReturning, type Transaction } from "../platform/db.js";
import type { RoleName } from "../platform/context.js";

export interface TenantRow {
  id: string;
  name: string;
  rate_limits: Record<string, { limit: number; windowSeconds: number }>;
  /** The tenant whose admins manage platform settings (at most one; PLATFORM_OWNER_TENANT_ID overrides). */
  platform_owner: boolean;
  created_at: Date;
}

export interface UserRow {
  tenant_id: string;
  id: string;
  email: string;
  name: string;
  role: RoleName;
  token_version: number;
  disabled: boolean;
  /** Set when a directory removed the user (SCIM DELETE): no credential of theirs works any more. */
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** A user with the account columns of migration 0020 that sign-in reads. */
export interface AccountRow extends UserRow {
  email_verified_at: Date | null;
  deleted_at: Date | null;
}

export interface ApiKeyRow {
  tenant_id: string;
  id: string;
  user_id: string;
  name: string;
  prefix: string;
  key_hash: string;
  scopes: string[];
  expires_at: Date | null;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
  revoke_reason: string | null;
}

export interface OAuthClientRow {
  tenant_id: string;
  id: string;
  name: string;
  client_id: string;
  secret_hash: string;
  scopes: string[];
  created_by: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** Tenants, users, API keys and OAuth clients. Every method takes the tenant first, except the
 * few named ...AcrossTenants that authentication needs before it knows the tenant. */
export class IdentityStore {
  constructor(private readonly db: Sequelize) {}

  transaction<T>(fn: (t: Transaction) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  async insertTenant(id: string, name: string, t?: Transaction, platformOwner = false): Promise<TenantRow> {
    const [row] = await execReturning<TenantRow>(
      this.db,
      "INSERT INTO tenants (id, name, platform_owner) VALUES ($1, $2, $3) RETURNING *",
      [id, name, platformOwner],
      t,
    );
    return row;
  }

  async findTenant(tenantId: string): Promise<TenantRow | null> {
    const [row] = await selectRows<TenantRow>(this.db, "SELECT * FROM tenants WHERE id = $1", [tenantId]);
    return row ?? null;
  }

  /** Per-tenant rate-limit overrides, read by the rate-limit policy (cached there for 30 seconds). */
  async setTenantRateLimits(tenantId: string, limits: TenantRow["rate_limits"]): Promise<TenantRow | null> {
    const [row] = await execReturning<TenantRow>(
      this.db,
      "UPDATE tenants SET rate_limits = $2 WHERE id = $1 RETURNING *",
      [tenantId, JSON.stringify(limits)],
    );
    return row ?? null;
  }

  async insertUser(
    tenantId: string,
    user: { id: string; email: string; name: string; role: RoleName },
    t?: Transaction,
  ): Promise<UserRow> {
    const [row] = await execReturning<UserRow>(
      this.db,
      `INSERT INTO users (tenant_id, id, email, name, role) VALUES ($1, $2, $3, $4, $5) RETURNING *`,
      [tenantId, user.id, user.email, user.name, user.role],
      t,
    );
    return row;
  }

  async findUser(tenantId: string, userId: string): Promise<UserRow | null> {
    const [row] = await selectRows<UserRow>(this.db, "SELECT * FROM users WHERE tenant_id = $1 AND id = $2", [
      tenantId,
      userId,
    ]);
    return row ?? null;
  }

  /** Spec 2.4: a mandatory offer's approver must be an (active) admin of the same tenant. */
  async isActiveAdmin(tenantId: string, userId: string): Promise<boolean> {
    const user = await this.findUser(tenantId, userId);
    return user !== null && user.role === "admin" && !user.disabled;
  }

  /** Every change of role or disabled state bumps token_version (spec 5.4). */
  async updateUser(
    tenantId: string,
    userId: string,
    change: { role?: RoleName; disabled?: boolean },
  ): Promise<UserRow | null> {
    const [row] = await execReturning<UserRow>(
      this.db,
      `UPDATE users SET role = COALESCE($3, role), disabled = COALESCE($4, disabled),
         token_version = token_version + 1, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, userId, change.role ?? null, change.disabled ?? null],
    );
    return row ?? null;
  }

  async insertApiKey(tenantId: string, key: Omit<ApiKeyRow, "tenant_id" | "created_at" | "last_used_at" | "revoked_at" | "revoke_reason">, t?: Transaction): Promise<ApiKeyRow> {
    const [row] = await execReturning<ApiKeyRow>(
      this.db,
      `INSERT INTO api_keys (tenant_id, id, user_id, name, prefix, key_hash, scopes, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [tenantId, key.id, key.user_id, key.name, key.prefix, key.key_hash, key.scopes, key.expires_at],
      t,
    );
    return row;
  }

  /** Newest first: the working keys, or with `includeRevoked` every key, revoked and expired ones too. */
  listApiKeys(tenantId: string, includeRevoked: boolean): Promise<ApiKeyRow[]> {
    return selectRows<ApiKeyRow>(
      this.db,
      `SELECT * FROM api_keys WHERE tenant_id = $1
         AND ($2 OR (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))) ORDER BY id DESC`,
      [tenantId, includeRevoked],
    );
  }

  /** Revokes once; a second revoke keeps the first time and reason. */
  async revokeApiKey(tenantId: string, id: string, reason: string | null): Promise<ApiKeyRow | null> {
    const [row] = await execReturning<ApiKeyRow>(
      this.db,
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()),
         revoke_reason = CASE WHEN revoked_at IS NULL THEN $3 ELSE revoke_reason END
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, id, reason],
    );
    return row ?? null;
  }

  async findApiKeyByHashAcrossTenants(keyHash: string): Promise<ApiKeyRow | null> {
    const [row] = await selectRows<ApiKeyRow>(this.db, "SELECT * FROM api_keys WHERE key_hash = $1", [keyHash]);
    return row ?? null;
  }

  async touchApiKey(tenantId: string, id: string): Promise<void> {
    await this.db.query("UPDATE api_keys SET last_used_at = now() WHERE tenant_id = $1 AND id = $2", {
      bind: [tenantId, id],
    });
  }

  async insertOAuthClient(tenantId: string, c: Omit<OAuthClientRow, "tenant_id" | "created_at" | "revoked_at">): Promise<OAuthClientRow> {
    const [row] = await execReturning<OAuthClientRow>(
      this.db,
      `INSERT INTO oauth_clients (tenant_id, id, name, client_id, secret_hash, scopes, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [tenantId, c.id, c.name, c.client_id, c.secret_hash, c.scopes, c.created_by],
    );
    return row;
  }

  /** Newest first: the working clients, or with `includeRevoked` revoked ones too. */
  /** The newest `limit` clients, and how many there are in all (the window counts before the limit). */
  async listOAuthClients(tenantId: string, limit: number, includeRevoked: boolean): Promise<{ rows: OAuthClientRow[]; total: number }> {
    const found = await selectRows<OAuthClientRow & { total_count: string }>(
      this.db,
      "SELECT *, count(*) OVER () AS total_count FROM oauth_clients WHERE tenant_id = $1 AND ($3 OR revoked_at IS NULL) ORDER BY id DESC LIMIT $2",
      [tenantId, limit, includeRevoked],
    );
    const rows = found.map(({ total_count: _, ...row }) => row);
    return { rows, total: found.length ? Number(found[0].total_count) : 0 };
  }

  async revokeOAuthClient(tenantId: string, id: string): Promise<OAuthClientRow | null> {
    const [row] = await execReturning<OAuthClientRow>(
      this.db,
      `UPDATE oauth_clients SET revoked_at = COALESCE(revoked_at, now())
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, id],
    );
    return row ?? null;
  }

  /** Who created the tenant's client `clientId` (null when unknown or created without a user). */
  async oauthClientCreator(tenantId: string, clientId: string): Promise<string | null> {
    const [row] = await selectRows<{ created_by: string | null }>(this.db, "SELECT created_by FROM oauth_clients WHERE tenant_id = $1 AND client_id = $2", [
      tenantId,
      clientId,
    ]);
    return row?.created_by ?? null;
  }

  async findOAuthClientAcrossTenants(clientId: string): Promise<OAuthClientRow | null> {
    const [row] = await selectRows<OAuthClientRow>(this.db, "SELECT * FROM oauth_clients WHERE client_id = $1", [
      clientId,
    ]);
    return row ?? null;
  }

  // ---- Accounts: people who sign in (sessions, identity providers, directories) ----------------

  /** A user with a verified e-mail and no password (identity provider, directory). */
  async insertVerifiedUser(tenantId: string, user: { id: string; email: string; name: string; role: RoleName }, t?: Transaction): Promise<AccountRow> {
    const [row] = await execReturning<AccountRow>(
      this.db,
      `INSERT INTO users (tenant_id, id, email, name, role, email_verified_at) VALUES ($1, $2, $3, $4, $5, now()) RETURNING *`,
      [tenantId, user.id, user.email, user.name, user.role],
      t,
    );
    return row;
  }

  /** The tenant's user with this e-mail in any letter case (the oldest, should case variants exist), removed ones included. */
  async findAccountByEmail(tenantId: string, email: string, t?: Transaction): Promise<AccountRow | null> {
    const [row] = await selectRows<AccountRow>(
      this.db,
      "SELECT * FROM users WHERE tenant_id = $1 AND lower(email) = lower($2) ORDER BY created_at, id LIMIT 1",
      [tenantId, email],
      t,
    );
    return row ?? null;
  }

  /** Every account whose e-mail is this one and verified, oldest first: sign-in without a tenant starts here. */
  verifiedAccountsByEmailAcrossTenants(email: string, t?: Transaction): Promise<AccountRow[]> {
    return selectRows<AccountRow>(
      this.db,
      "SELECT * FROM users WHERE lower(email) = lower($1) AND email_verified_at IS NOT NULL ORDER BY created_at, tenant_id, id",
      [email],
      t,
    );
  }

  /** Serializes the creation of accounts for one e-mail address across processes, until `t` ends. */
  async lockEmail(t: Transaction, email: string): Promise<void> {
    await this.db.query("SELECT pg_advisory_xact_lock(727005, hashtext(lower($1)))", { bind: [email], transaction: t });
  }

  /** An identity provider or directory vouched for the address. */
  async markEmailVerified(tenantId: string, userId: string, t?: Transaction): Promise<void> {
    await this.db.query("UPDATE users SET email_verified_at = COALESCE(email_verified_at, now()) WHERE tenant_id = $1 AND id = $2", {
      bind: [tenantId, userId],
      transaction: t,
    });
  }
}

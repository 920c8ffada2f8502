import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { RoleName } from "../platform/context.js";

/** A users row with the columns the directory reads and writes (migrations 0001, 0020, 0026). */
export interface DirectoryUserRow {
  tenant_id: string;
  id: string;
  email: string;
  name: string;
  role: RoleName;
  disabled: boolean;
  token_version: number;
  user_name: string | null;
  given_name: string | null;
  family_name: string | null;
  external_id: string | null;
  email_verified_at: Date | null;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** What a directory write sets on a user. */
export interface DirectoryUserWrite {
  userName: string;
  email: string;
  name: string;
  givenName: string | null;
  familyName: string | null;
  externalId: string | null;
  disabled: boolean;
}

/**
 * The users a tenant's directory manages, as SCIM sees them: every query is scoped to the tenant
 * and, but for the revival of a deleted user, to users not deleted. A change of role or of the
 * disabled state bumps token_version (spec 5.4), as IdentityStore.updateUser does.
 */
export class ScimStore {
  constructor(private readonly db: Sequelize) {}

  /** Every live user of the tenant, oldest first: the set a SCIM filter is evaluated over. */
  listUsers(tenantId: string, t?: Transaction): Promise<DirectoryUserRow[]> {
    return selectRows<DirectoryUserRow>(
      this.db,
      "SELECT * FROM users WHERE tenant_id = $1 AND deleted_at IS NULL ORDER BY created_at, id",
      [tenantId],
      t,
    );
  }

  async findUser(tenantId: string, id: string, t?: Transaction): Promise<DirectoryUserRow | null> {
    const [row] = await selectRows<DirectoryUserRow>(
      this.db,
      "SELECT * FROM users WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL",
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  /** A deleted user holding this userName or address, whom a new POST brings back rather than collides with. */
  async findDeleted(tenantId: string, userName: string, email: string, t: Transaction): Promise<DirectoryUserRow | null> {
    const [row] = await selectRows<DirectoryUserRow>(
      this.db,
      `SELECT * FROM users WHERE tenant_id = $1 AND deleted_at IS NOT NULL
         AND (lower(user_name) = lower($2) OR email = $3)
       ORDER BY (lower(user_name) = lower($2)) DESC NULLS LAST LIMIT 1`,
      [tenantId, userName, email],
      t,
    );
    return row ?? null;
  }

  /** A new user is a viewer until a group (a role) takes them in; the directory proved the address. */
  async insertUser(tenantId: string, id: string, w: DirectoryUserWrite, t: Transaction): Promise<DirectoryUserRow> {
    const [row] = await execReturning<DirectoryUserRow>(
      this.db,
      `INSERT INTO users (tenant_id, id, email, name, role, disabled, user_name, given_name, family_name, external_id, email_verified_at)
       VALUES ($1, $2, $3, $4, 'viewer', $5, $6, $7, $8, $9, now()) RETURNING *`,
      [tenantId, id, w.email, w.name, w.disabled, w.userName, w.givenName, w.familyName, w.externalId],
      t,
    );
    return row;
  }

  /**
   * Replaces what the directory owns of a user. `revive` also clears deleted_at (a POST of a deleted
   * user). token_version moves whenever the disabled state does, so sessions and keys re-check.
   */
  async updateUser(tenantId: string, id: string, w: DirectoryUserWrite, t: Transaction, revive = false): Promise<DirectoryUserRow | null> {
    const [row] = await execReturning<DirectoryUserRow>(
      this.db,
      `UPDATE users SET email = $3, name = $4, disabled = $5, user_name = $6, given_name = $7, family_name = $8,
         external_id = $9, email_verified_at = COALESCE(email_verified_at, now()),
         token_version = token_version + CASE WHEN disabled IS DISTINCT FROM $5 OR $10 THEN 1 ELSE 0 END,
         deleted_at = CASE WHEN $10 THEN NULL ELSE deleted_at END, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 AND (deleted_at IS NULL OR $10) RETURNING *`,
      [tenantId, id, w.email, w.name, w.disabled, w.userName, w.givenName, w.familyName, w.externalId, revive],
      t,
    );
    return row ?? null;
  }

  /** Users of the tenant with this role (a group's members). */
  usersWithRole(tenantId: string, role: RoleName, t?: Transaction): Promise<DirectoryUserRow[]> {
    return selectRows<DirectoryUserRow>(
      this.db,
      "SELECT * FROM users WHERE tenant_id = $1 AND role = $2 AND deleted_at IS NULL ORDER BY created_at, id",
      [tenantId, role],
      t,
    );
  }

  /** Sets the role of live users whose role differs; returns the rows changed (each with a new token_version). */
  setRole(tenantId: string, ids: readonly string[], role: RoleName, t: Transaction): Promise<DirectoryUserRow[]> {
    if (!ids.length) return Promise.resolve([]);
    return execReturning<DirectoryUserRow>(
      this.db,
      `UPDATE users SET role = $3, token_version = token_version + 1, updated_at = now()
       WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL AND role <> $3 RETURNING *`,
      [tenantId, ids, role],
      t,
    );
  }

  /** SCIM DELETE: the row stays (audit entries keep naming the user); access ends. */
  async softDeleteUser(tenantId: string, id: string, t: Transaction): Promise<DirectoryUserRow | null> {
    const [row] = await execReturning<DirectoryUserRow>(
      this.db,
      `UPDATE users SET deleted_at = now(), disabled = true, token_version = token_version + 1, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  /** Revokes the user's live API keys; returns their hashes for the authenticators' caches. */
  async revokeKeysOf(tenantId: string, userId: string, reason: string, t: Transaction): Promise<string[]> {
    const rows = await execReturning<{ key_hash: string }>(
      this.db,
      `UPDATE api_keys SET revoked_at = now(), revoke_reason = $3
       WHERE tenant_id = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING key_hash`,
      [tenantId, userId, reason],
      t,
    );
    return rows.map((r) => r.key_hash);
  }
}

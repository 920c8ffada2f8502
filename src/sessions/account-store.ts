import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { UserRow } from "../identity/identity-store.js";

/** A user row with the columns password sign-in reads (migrations 0020, 0024). */
export interface AccountRow extends UserRow {
  password_hash: string | null;
  email_verified_at: Date | null;
  last_sign_in_at: Date | null;
  tenant_name: string;
}

/**
 * The password and verification columns of `users`, which this domain owns; the rows themselves
 * are created through the identity store. Lookups by address run before the tenant is known, so
 * they are named ...AcrossTenants like the key lookups of authentication.
 */
export class AccountStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Serializes registrations of one address across processes until the transaction ends, so two
   * concurrent sign-ups of one address cannot both find it free (users are unique per tenant only).
   */
  async lockAddress(email: string, t: Transaction): Promise<void> {
    await this.db.query("SELECT pg_advisory_xact_lock(hashtextextended('register:' || $1, 0))", { bind: [email], transaction: t });
  }

  /** Every live membership of an address, the most recently used (then created) first. */
  findByEmailAcrossTenants(email: string, t?: Transaction): Promise<AccountRow[]> {
    return selectRows<AccountRow>(
      this.db,
      `SELECT u.*, tn.name AS tenant_name FROM users u JOIN tenants tn ON tn.id = u.tenant_id
       WHERE lower(u.email) = $1 AND u.deleted_at IS NULL
       ORDER BY u.last_sign_in_at DESC NULLS LAST, u.created_at DESC, u.tenant_id`,
      [email],
      t,
    );
  }

  async find(tenantId: string, userId: string, t?: Transaction): Promise<AccountRow | null> {
    const [row] = await selectRows<AccountRow>(
      this.db,
      `SELECT u.*, tn.name AS tenant_name FROM users u JOIN tenants tn ON tn.id = u.tenant_id WHERE u.tenant_id = $1 AND u.id = $2`,
      [tenantId, userId],
      t,
    );
    return row ?? null;
  }

  async setPasswordHash(tenantId: string, userId: string, passwordHash: string, t: Transaction): Promise<void> {
    await this.db.query("UPDATE users SET password_hash = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2", {
      bind: [tenantId, userId, passwordHash],
      transaction: t,
    });
  }

  /** Proves the address; the first proof counts, later ones keep its time. */
  async markVerified(tenantId: string, userId: string, now: Date, t: Transaction): Promise<void> {
    await this.db.query("UPDATE users SET email_verified_at = COALESCE(email_verified_at, $3) WHERE tenant_id = $1 AND id = $2", {
      bind: [tenantId, userId, now],
      transaction: t,
    });
  }

  /**
   * A new password: every session and key of the user re-checks and ends (spec 5.4 tokenVersion),
   * and the address counts as proven, since the reset link reached it.
   */
  async resetPassword(tenantId: string, userId: string, passwordHash: string, now: Date, t: Transaction): Promise<UserRow | null> {
    const [row] = await execReturning<UserRow>(
      this.db,
      `UPDATE users SET password_hash = $3, token_version = token_version + 1, email_verified_at = COALESCE(email_verified_at, $4), updated_at = now()
       WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING *`,
      [tenantId, userId, passwordHash, now],
      t,
    );
    return row ?? null;
  }

  async recordSignIn(tenantId: string, userId: string, now: Date): Promise<void> {
    await this.db.query("UPDATE users SET last_sign_in_at = $3 WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, userId, now] });
  }
}

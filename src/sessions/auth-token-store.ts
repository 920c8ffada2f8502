import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";

export type AuthTokenPurpose = "verify_email" | "password_reset";

export interface AuthTokenRow {
  tenant_id: string;
  id: string;
  user_id: string;
  purpose: AuthTokenPurpose;
  token_hash: string;
  expires_at: Date;
  used_at: Date | null;
  created_at: Date;
}

/** The mailed single-use tokens (migration 0024). Times come from the caller's clock, so tests can cross a lifetime. */
export class AuthTokenStore {
  constructor(private readonly db: Sequelize) {}

  async insert(tenantId: string, row: Pick<AuthTokenRow, "id" | "user_id" | "purpose" | "token_hash" | "expires_at">, t?: Transaction): Promise<void> {
    await this.db.query(
      `INSERT INTO auth_tokens (tenant_id, id, user_id, purpose, token_hash, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      { bind: [tenantId, row.id, row.user_id, row.purpose, row.token_hash, row.expires_at], transaction: t },
    );
  }

  /**
   * Marks the token used and returns it, only when it is unused and unexpired at `now`: one
   * conditional UPDATE, so two concurrent uses of one token cannot both succeed.
   */
  async consumeAcrossTenants(purpose: AuthTokenPurpose, tokenHash: string, now: Date, t: Transaction): Promise<AuthTokenRow | null> {
    const [row] = await execReturning<AuthTokenRow>(
      this.db,
      `UPDATE auth_tokens SET used_at = $3 WHERE token_hash = $1 AND purpose = $2 AND used_at IS NULL AND expires_at > $3 RETURNING *`,
      [tokenHash, purpose, now],
      t,
    );
    return row ?? null;
  }

  /** The token as stored, to say why it could not be used (expired, used, unknown). */
  async findAcrossTenants(purpose: AuthTokenPurpose, tokenHash: string): Promise<AuthTokenRow | null> {
    const [row] = await selectRows<AuthTokenRow>(this.db, "SELECT * FROM auth_tokens WHERE token_hash = $1 AND purpose = $2", [tokenHash, purpose]);
    return row ?? null;
  }

  /** Retires a user's other outstanding tokens of a purpose (a reset makes older reset links useless). */
  async retireOthers(tenantId: string, userId: string, purpose: AuthTokenPurpose, now: Date, t: Transaction): Promise<void> {
    await this.db.query(
      "UPDATE auth_tokens SET used_at = $4 WHERE tenant_id = $1 AND user_id = $2 AND purpose = $3 AND used_at IS NULL",
      { bind: [tenantId, userId, purpose, now], transaction: t },
    );
  }
}

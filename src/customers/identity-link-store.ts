import type { Sequelize } from "sequelize";
import { execReturning, isUniqueViolation, selectRows } from "../platform/db.js";

export interface IdentityLinkRow {
  id: string;
  customer_id: string;
  type: string;
  value: string;
  confidence: number;
  created_at: Date;
}

/** A customer's other identifiers (the profile's `identities`). Tenant first, always. */
export class IdentityLinkStore {
  constructor(private readonly db: Sequelize) {}

  list(tenantId: string, customerId: string): Promise<IdentityLinkRow[]> {
    return selectRows<IdentityLinkRow>(
      this.db,
      "SELECT id, customer_id, type, value, confidence, created_at FROM customer_identities WHERE tenant_id = $1 AND customer_id = $2 ORDER BY created_at, id",
      [tenantId, customerId],
    );
  }

  /** The new link, or null when the customer already has this type and value (the unique index decides). */
  async create(tenantId: string, row: Omit<IdentityLinkRow, "created_at">): Promise<IdentityLinkRow | null> {
    try {
      const [created] = await execReturning<IdentityLinkRow>(
        this.db,
        `INSERT INTO customer_identities (tenant_id, id, customer_id, type, value, confidence) VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id, customer_id, type, value, confidence, created_at`,
        [tenantId, row.id, row.customer_id, row.type, row.value, row.confidence],
      );
      return created;
    } catch (err) {
      if (isUniqueViolation(err)) return null;
      throw err;
    }
  }

  async delete(tenantId: string, customerId: string, id: string): Promise<boolean> {
    const rows = await execReturning<{ id: string }>(
      this.db,
      "DELETE FROM customer_identities WHERE tenant_id = $1 AND customer_id = $2 AND id = $3 RETURNING id",
      [tenantId, customerId, id],
    );
    return rows.length > 0;
  }
}

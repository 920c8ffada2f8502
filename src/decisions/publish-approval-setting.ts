import type { Sequelize } from "sequelize";
import { selectRows, type Transaction } from "../platform/db.js";

/**
 * The tenant settings read model the approvals' publish gate asks (docs/approvals.md): whether
 * publishing a decision flow needs an approved publish approval. Read inside the publish's
 * transaction, so a publish sees the setting as it commits.
 */
export async function requiresPublishApproval(db: Sequelize, tenantId: string, t?: Transaction): Promise<boolean> {
  const [row] = await selectRows<{ required: boolean }>(
    db,
    "SELECT require_publish_approval AS required FROM tenant_settings WHERE tenant_id = $1",
    [tenantId],
    t,
  );
  return row?.required ?? false;
}

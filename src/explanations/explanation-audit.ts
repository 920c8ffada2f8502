import type { Sequelize } from "sequelize";
import type { AuditLog } from "../audit/audit-log.js";
import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";

/**
 * Audit entries for explanations (action `explain`, entity `decision_trace`): spec 4.11 asks for
 * one on every SHAP answer and every regulator narrative. The hash chain makes entries unerasable,
 * so `changes` holds ids, hashes and counts, never the narrative or customer attributes.
 */
export class ExplanationAudit {
  constructor(
    private readonly db: Sequelize,
    private readonly audit: AuditLog,
  ) {}

  /** In `t` when the entry must commit with other writes, else in a transaction of its own. */
  async record(ctx: TenantContext, traceId: string, changes: Record<string, unknown>, t?: Transaction): Promise<void> {
    const write = (tx: Transaction) =>
      this.audit.record(tx, ctx, {
        action: "explain",
        entityType: "decision_trace",
        entityId: traceId,
        entityName: null,
        before: null,
        after: null,
        entityVersion: null,
        changes,
      });
    if (t) await write(t);
    else await tenantWriteTransaction(this.db, ctx.tenantId, write);
  }
}

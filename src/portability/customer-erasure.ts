import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { Sequelize } from "sequelize";
import { ErasureReportSchema, type EraseCustomerRequest, type ErasureReport } from "../../gen/decisioning/v1/portability_pb.js";
import type { AuditLog } from "../audit/audit-log.js";
import { CUSTOMER_CHANNEL } from "../decisions/customer-cache.js";
import type { VariantAssignments } from "../experiments/variant-assignments.js";
import type { Bus } from "../platform/bus.js";
import type { TenantContext } from "../platform/context.js";
import { retryingTransaction, selectRows } from "../platform/db.js";
import { AppError, invalidField } from "../platform/errors.js";

export interface ErasureDeps {
  db: Sequelize;
  audit: AuditLog;
  bus: Bus;
  assignments: Pick<VariantAssignments, "forget" | "count">;
}

/**
 * The tables that hold a customer's data, children first (narratives cascade from their traces).
 * A later domain that stores customer data (events, CLV, profiles) adds its table here.
 */
const CUSTOMER_TABLES = [
  { kind: "decisionTraces", table: "decision_traces" },
  { kind: "interactions", table: "interactions" },
  { kind: "recommendations", table: "recommendations" },
  { kind: "customers", table: "customers" },
] as const;

/**
 * GDPR erasure of one customer (spec 4.13, docs/portability.md "Erasure"): every row naming them,
 * their kept experiment variants, and every process's cached copy of their attributes; then a
 * check that nothing is left, before the answer. The audit entry names a hash of the id, never
 * the id: the hash chain makes audit entries unerasable.
 */
export class CustomerErasure {
  constructor(private readonly deps: ErasureDeps) {}

  async erase(ctx: TenantContext, req: EraseCustomerRequest): Promise<ErasureReport> {
    const customerId = req.customerId;
    if (!customerId.trim()) throw invalidField("customerId", "is required");
    const removed: Record<string, number> = {};
    const experimentIds = await this.experimentIds(ctx.tenantId);
    await retryingTransaction(this.deps.db, async (t) => {
      for (const { kind, table } of CUSTOMER_TABLES) {
        const [, result] = await this.deps.db.query(`DELETE FROM ${table} WHERE tenant_id = $1 AND customer_id = $2`, { bind: [ctx.tenantId, customerId], transaction: t });
        removed[kind] = (result as { rowCount?: number }).rowCount ?? 0;
      }
      await this.deps.audit.record(t, ctx, {
        action: "gdpr_erasure",
        entityType: "customer",
        entityId: subjectHash(ctx.tenantId, customerId),
        entityName: null,
        before: null,
        after: null,
        entityVersion: null,
        changes: { removed: { ...removed } },
      });
    });
    removed.variantAssignments = await this.deps.assignments.forget(ctx.tenantId, customerId, experimentIds);
    // Confirmed: the answer waits until every process has dropped its cached attributes.
    await this.deps.bus.publish(CUSTOMER_CHANNEL, `${ctx.tenantId}|${customerId}`, { confirmed: true });
    await this.verify(ctx.tenantId, customerId, experimentIds);
    return create(ErasureReportSchema, { removed, verified: true });
  }

  /** Every experiment the tenant ever had, deleted ones too: their assignments live 30 days. */
  private async experimentIds(tenantId: string): Promise<string[]> {
    return (await selectRows<{ id: string }>(this.deps.db, "SELECT id FROM experiments WHERE tenant_id = $1", [tenantId])).map((r) => r.id);
  }

  /** Reads everything back; a survivor is a 500 that says erasure is incomplete, never a false success. */
  private async verify(tenantId: string, customerId: string, experimentIds: string[]): Promise<void> {
    const left: string[] = [];
    for (const { kind, table } of CUSTOMER_TABLES) {
      const [row] = await selectRows<{ n: number }>(this.deps.db, `SELECT count(*)::int AS n FROM ${table} WHERE tenant_id = $1 AND customer_id = $2`, [tenantId, customerId]);
      if (row.n > 0) left.push(kind);
    }
    if ((await this.deps.assignments.count(tenantId, customerId, experimentIds)) > 0) left.push("variantAssignments");
    if (left.length) {
      throw new AppError({ code: "INTERNAL", reason: "ERASURE_INCOMPLETE", message: `erasure could not be verified: data remains in ${left.join(", ")}; retry the request` });
    }
  }
}

/** Names the erased customer in the audit entry without naming them: a tenant-scoped SHA-256. */
export function subjectHash(tenantId: string, customerId: string): string {
  return createHash("sha256").update(`${tenantId}\n${customerId}`).digest("hex");
}

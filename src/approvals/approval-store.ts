import type { Sequelize } from "sequelize";
import { execReturning, selectRows, selectStatusPage, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import type { Stage } from "../core/approval-stages.js";


export type ApprovalStatus = "pending" | "approved" | "rejected" | "expired";

export interface ApprovalRow {
  tenant_id: string;
  id: string;
  entity_type: string;
  entity_id: string | null;
  action: "create" | "update" | "delete" | "publish";
  payload: Record<string, unknown>;
  stages: Stage[];
  status: ApprovalStatus;
  comment: string;
  requested_by: string | null;
  requested_by_name: string;
  resolved_at: Date | null;
  consumed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewApproval = Omit<ApprovalRow, "tenant_id" | "status" | "resolved_at" | "consumed_at" | "created_at" | "updated_at">;

/** Approval requests, tenant first in every statement; cross-tenant work is named so. */
export class ApprovalStore {
  constructor(private readonly db: Sequelize) {}

  async insert(t: Transaction, tenantId: string, row: NewApproval): Promise<ApprovalRow> {
    const [stored] = await execReturning<ApprovalRow>(
      this.db,
      `INSERT INTO approval_requests (tenant_id, id, entity_type, entity_id, action, payload, stages, comment, requested_by, requested_by_name)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *`,
      [tenantId, row.id, row.entity_type, row.entity_id, row.action, JSON.stringify(row.payload), JSON.stringify(row.stages), row.comment,
        row.requested_by, row.requested_by_name],
      t,
    );
    return stored;
  }

  /** Inside a transaction the row is locked: resolving it is decided by whoever holds it. */
  async find(tenantId: string, id: string, t?: Transaction): Promise<ApprovalRow | null> {
    const [row] = await selectRows<ApprovalRow>(
      this.db,
      `SELECT * FROM approval_requests WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  page(tenantId: string, page: CursorPageRequest, status: ApprovalStatus | null): Promise<ApprovalRow[]> {
    return selectStatusPage<ApprovalRow>(this.db, "approval_requests", tenantId, page, status);
  }

  async update(
    t: Transaction,
    tenantId: string,
    id: string,
    values: Partial<Pick<ApprovalRow, "stages" | "status" | "entity_id" | "resolved_at" | "consumed_at">>,
  ): Promise<ApprovalRow> {
    const bind: unknown[] = [tenantId, id];
    const sets = Object.entries(values).map(([column, value]) => {
      bind.push(column === "stages" ? JSON.stringify(value) : value);
      return `${column} = $${bind.length}`;
    });
    const [row] = await execReturning<ApprovalRow>(
      this.db,
      `UPDATE approval_requests SET ${sets.join(", ")}, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  /** The oldest approved publish approval of the flow that no publish has used yet, locked. */
  async unusedPublishApproval(t: Transaction, tenantId: string, flowId: string): Promise<ApprovalRow | null> {
    const [row] = await selectRows<ApprovalRow>(
      this.db,
      `SELECT * FROM approval_requests
       WHERE tenant_id = $1 AND entity_type = 'decisionFlow' AND entity_id = $2 AND action = 'publish' AND status = 'approved' AND consumed_at IS NULL
       ORDER BY resolved_at LIMIT 1 FOR UPDATE`,
      [tenantId, flowId],
      t,
    );
    return row ?? null;
  }

  /**
   * Expiry (spec 3.5): pending requests created before `cutoff` become `expired`; only status and
   * resolved_at change. The conditional update skips a request an approver resolved meanwhile.
   */
  async expireAcrossTenants(cutoff: Date): Promise<Array<{ tenant_id: string; id: string }>> {
    return execReturning(
      this.db,
      `UPDATE approval_requests SET status = 'expired', resolved_at = now()
       WHERE status = 'pending' AND created_at < $1 RETURNING tenant_id, id`,
      [cutoff],
    );
  }
}

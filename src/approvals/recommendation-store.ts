import type { Sequelize } from "sequelize";
import { execReturning, selectRows, selectStatusPage, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";

export interface RecommendationRow {
  tenant_id: string;
  id: string;
  entity_type: string;
  entity_id: string;
  patch: Record<string, unknown>;
  rationale: string;
  status: "pending" | "applied";
  applied_at: Date | null;
  created_by_name: string;
  created_at: Date;
  updated_at: Date;
}

type Writable = Partial<Pick<RecommendationRow, "entity_type" | "entity_id" | "patch" | "rationale" | "status" | "applied_at">>;

/** AI recommendations (docs/approvals.md#ai-recommendations), tenant first in every statement. */
export class RecommendationStore {
  constructor(private readonly db: Sequelize) {}

  async insert(t: Transaction, tenantId: string, row: Pick<RecommendationRow, "id" | "entity_type" | "entity_id" | "patch" | "rationale" | "created_by_name">): Promise<RecommendationRow> {
    const [stored] = await execReturning<RecommendationRow>(
      this.db,
      `INSERT INTO ai_recommendations (tenant_id, id, entity_type, entity_id, patch, rationale, created_by_name)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
      [tenantId, row.id, row.entity_type, row.entity_id, JSON.stringify(row.patch), row.rationale, row.created_by_name],
      t,
    );
    return stored;
  }

  /** Inside a transaction the row is locked, so that one apply wins and the others see it applied. */
  async find(tenantId: string, id: string, t?: Transaction): Promise<RecommendationRow | null> {
    const [row] = await selectRows<RecommendationRow>(
      this.db,
      `SELECT * FROM ai_recommendations WHERE tenant_id = $1 AND id = $2${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  page(tenantId: string, page: CursorPageRequest, status: string | null): Promise<RecommendationRow[]> {
    return selectStatusPage<RecommendationRow>(this.db, "ai_recommendations", tenantId, page, status);
  }

  async update(t: Transaction, tenantId: string, id: string, values: Writable): Promise<RecommendationRow> {
    const bind: unknown[] = [tenantId, id];
    const sets = Object.entries(values).map(([column, value]) => {
      bind.push(column === "patch" ? JSON.stringify(value) : value);
      return `${column} = $${bind.length}`;
    });
    const [row] = await execReturning<RecommendationRow>(
      this.db,
      `UPDATE ai_recommendations SET ${sets.join(", ")}, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  async delete(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query("DELETE FROM ai_recommendations WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id], transaction: t });
  }
}

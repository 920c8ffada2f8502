import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import type { JourneyEnrollmentView } from "../customers/customer-activity.js";

export interface StepResult {
  type: string;
  status: "ok" | "failed";
  recommendationId?: string;
  offerIds: string[];
  error?: string;
}

export interface EnrollmentRow {
  tenant_id: string;
  id: string;
  journey_id: string;
  customer_id: string;
  status: "active" | "completed" | "exited";
  trigger_id: string | null;
  event_id: string | null;
  steps: StepResult[];
  enrolled_at: Date;
}

/** journey_enrollments of a tenant; tenant first, always. */
export class EnrollmentStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Enrols the customer unless an active enrollment in the journey exists: the partial unique index
   * decides, so concurrent triggers in any number of processes enrol once. Null when already enrolled.
   */
  async enrol(tenantId: string, row: Pick<EnrollmentRow, "id" | "journey_id" | "customer_id" | "trigger_id" | "event_id">): Promise<EnrollmentRow | null> {
    const [created] = await execReturning<EnrollmentRow>(
      this.db,
      `INSERT INTO journey_enrollments (tenant_id, id, journey_id, customer_id, trigger_id, event_id)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (tenant_id, journey_id, customer_id) WHERE status = 'active' DO NOTHING
       RETURNING *`,
      [tenantId, row.id, row.journey_id, row.customer_id, row.trigger_id, row.event_id],
    );
    return created ?? null;
  }

  async recordSteps(tenantId: string, id: string, steps: StepResult[]): Promise<void> {
    await this.db.query("UPDATE journey_enrollments SET steps = $3::jsonb WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id, JSON.stringify(steps)] });
  }

  /** The customer's enrollments in every journey, newest first (the unified profile's `journeys`). */
  async forCustomer(tenantId: string, customerId: string, limit: number): Promise<JourneyEnrollmentView[]> {
    const rows = await selectRows<EnrollmentRow>(
      this.db,
      "SELECT * FROM journey_enrollments WHERE tenant_id = $1 AND customer_id = $2 ORDER BY enrolled_at DESC, id DESC LIMIT $3",
      [tenantId, customerId, limit],
    );
    return rows.map((r) => ({ journeyId: r.journey_id, status: r.status, enrolledAt: r.enrolled_at }));
  }

  /** A keyset page of a journey's enrollments, newest id first, one extra row telling whether more exist. */
  page(tenantId: string, journeyId: string, page: CursorPageRequest, customerId: string | null): Promise<EnrollmentRow[]> {
    const bind: unknown[] = [tenantId, journeyId, page.limit + 1];
    let where = "tenant_id = $1 AND journey_id = $2";
    if (page.cursor) {
      bind.push(page.cursor);
      where += ` AND id < $${bind.length}`;
    }
    if (customerId) {
      bind.push(customerId);
      where += ` AND customer_id = $${bind.length}`;
    }
    return selectRows<EnrollmentRow>(this.db, `SELECT * FROM journey_enrollments WHERE ${where} ORDER BY id DESC LIMIT $3`, bind);
  }
}

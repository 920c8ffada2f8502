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
  completes_at: Date | null;
  ended_at: Date | null;
  exit_event_id: string | null;
}

/** journey_enrollments of a tenant; tenant first, always. */
export class EnrollmentStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Enrols the customer unless an active enrollment in the journey exists: the partial unique index
   * decides, so concurrent triggers in any number of processes enrol once. Null when already enrolled.
   * An active enrollment whose completion time has passed is completed first (the job may not have
   * reached it yet), so time alone decides when the customer may enter again.
   */
  async enrol(
    tenantId: string,
    row: Pick<EnrollmentRow, "id" | "journey_id" | "customer_id" | "trigger_id" | "event_id">,
    durationHours: number | null,
  ): Promise<EnrollmentRow | null> {
    await this.db.query(
      `UPDATE journey_enrollments SET status = 'completed', ended_at = completes_at
       WHERE tenant_id = $1 AND journey_id = $2 AND customer_id = $3 AND status = 'active' AND completes_at <= now()`,
      { bind: [tenantId, row.journey_id, row.customer_id] },
    );
    const [created] = await execReturning<EnrollmentRow>(
      this.db,
      `INSERT INTO journey_enrollments (tenant_id, id, journey_id, customer_id, trigger_id, event_id, completes_at)
       VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(hours => $7::int))
       ON CONFLICT (tenant_id, journey_id, customer_id) WHERE status = 'active' DO NOTHING
       RETURNING *`,
      [tenantId, row.id, row.journey_id, row.customer_id, row.trigger_id, row.event_id, durationHours],
    );
    return created ?? null;
  }

  /** Records the steps run; completes the enrollment now when its completion time has come (a duration of 0). */
  async finishSteps(tenantId: string, id: string, steps: StepResult[]): Promise<EnrollmentRow> {
    const [row] = await execReturning<EnrollmentRow>(
      this.db,
      `UPDATE journey_enrollments SET steps = $3::jsonb,
         status = CASE WHEN status = 'active' AND completes_at <= now() THEN 'completed' ELSE status END,
         ended_at = CASE WHEN status = 'active' AND completes_at <= now() THEN now() ELSE ended_at END
       WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      [tenantId, id, JSON.stringify(steps)],
    );
    return row;
  }

  /**
   * An accepted event exits the customer's active enrollments in every journey that lists its type
   * among its exit events; returns how many.
   */
  async exitOn(tenantId: string, customerId: string, eventType: string, eventId: string): Promise<number> {
    const rows = await execReturning<{ id: string }>(
      this.db,
      `UPDATE journey_enrollments e SET status = 'exited', ended_at = now(), exit_event_id = $4
       FROM journeys j
       WHERE e.tenant_id = $1 AND e.customer_id = $2 AND e.status = 'active'
         AND j.tenant_id = e.tenant_id AND j.id = e.journey_id AND $3 = ANY(j.exit_event_types)
       RETURNING e.id`,
      [tenantId, customerId, eventType, eventId],
    );
    return rows.length;
  }

  /** The completion job: up to `limit` active enrollments, of any tenant, whose completion time has passed. */
  async completeDue(now: Date, limit: number): Promise<number> {
    const [row] = await selectRows<{ n: number }>(
      this.db,
      `WITH done AS (
         UPDATE journey_enrollments SET status = 'completed', ended_at = completes_at
         WHERE (tenant_id, id) IN (
           SELECT tenant_id, id FROM journey_enrollments WHERE status = 'active' AND completes_at <= $1 ORDER BY completes_at LIMIT $2
         ) AND status = 'active'
         RETURNING 1
       ) SELECT count(*)::int AS n FROM done`,
      [now, limit],
    );
    return row.n;
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

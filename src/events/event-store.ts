import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";
import type { CustomerEventHistory, CustomerEventView } from "../customers/customer-activity.js";

/** An accepted event, ready to store. */
export interface EventRecord {
  id: string;
  eventType: string;
  customerId: string | null;
  sessionId: string | null;
  properties: Record<string, unknown>;
  occurredAt: Date;
}

interface EventRow {
  id: string;
  event_type: string;
  properties: Record<string, unknown>;
  occurred_at: Date;
}

/** customer_events of a tenant; tenant first, always. */
export class EventStore implements CustomerEventHistory {
  constructor(private readonly db: Sequelize) {}

  /** The whole batch in one statement: either every event of a validated batch is stored or none. */
  async insertAll(tenantId: string, events: readonly EventRecord[]): Promise<void> {
    if (!events.length) return;
    const bind: unknown[] = [tenantId];
    const tuples = events.map((e) => {
      const at = bind.length;
      bind.push(e.id, e.eventType, e.customerId, e.sessionId, JSON.stringify(e.properties), e.occurredAt);
      return `($1, $${at + 1}, $${at + 2}, $${at + 3}, $${at + 4}, $${at + 5}::jsonb, $${at + 6})`;
    });
    await execReturning(
      this.db,
      `INSERT INTO customer_events (tenant_id, id, event_type, customer_id, session_id, properties, occurred_at) VALUES ${tuples.join(", ")}`,
      bind,
    );
  }

  /** CustomerEventHistory (src/customers/customer-activity.ts): what the profile and CLV read. */
  async recent(tenantId: string, customerId: string, limit: number): Promise<CustomerEventView[]> {
    const rows = await selectRows<EventRow>(
      this.db,
      `SELECT id, event_type, properties, occurred_at FROM customer_events
       WHERE tenant_id = $1 AND customer_id = $2 ORDER BY occurred_at DESC, id DESC LIMIT $3`,
      [tenantId, customerId, limit],
    );
    return rows.map((r) => ({ id: r.id, eventType: r.event_type, properties: r.properties, occurredAt: r.occurred_at }));
  }

  async activitySpans(tenantId: string, customerIds: readonly string[]): Promise<Map<string, { firstAt: number; lastAt: number }>> {
    const rows = await selectRows<{ customer_id: string; first_at: Date; last_at: Date }>(
      this.db,
      `SELECT customer_id, min(occurred_at) AS first_at, max(occurred_at) AS last_at FROM customer_events
       WHERE tenant_id = $1 AND customer_id = ANY($2::text[]) GROUP BY customer_id`,
      [tenantId, customerIds],
    );
    return new Map(rows.map((r) => [r.customer_id, { firstAt: r.first_at.getTime(), lastAt: r.last_at.getTime() }]));
  }

  /** Walks the (tenant_id, customer_id, occurred_at) index and stops at `limit`: page k costs what page 1 costs. */
  async customerIdsAfter(tenantId: string, after: string, limit: number): Promise<string[]> {
    const rows = await selectRows<{ customer_id: string }>(
      this.db,
      `SELECT DISTINCT customer_id FROM customer_events
       WHERE tenant_id = $1 AND customer_id IS NOT NULL AND customer_id > $2 ORDER BY customer_id LIMIT $3`,
      [tenantId, after, limit],
    );
    return rows.map((r) => r.customer_id);
  }

  /** The first tenant id after `after` that has events (a skip over the primary key), or null. */
  async nextTenantWithEvents(after: string | null): Promise<string | null> {
    const [row] = await selectRows<{ tenant_id: string }>(
      this.db,
      // uuid has no min(): ORDER BY … LIMIT 1 on the primary key is the same index skip.
      after === null
        ? "SELECT tenant_id FROM customer_events ORDER BY tenant_id LIMIT 1"
        : "SELECT tenant_id FROM customer_events WHERE tenant_id > $1 ORDER BY tenant_id LIMIT 1",
      after === null ? [] : [after],
    );
    return row?.tenant_id ?? null;
  }

  /** Deletes at most `limit` of the tenant's events that happened before `cutoff`, oldest first; returns how many. */
  async deleteOlderThan(tenantId: string, cutoff: Date, limit: number): Promise<number> {
    const [row] = await selectRows<{ n: number }>(
      this.db,
      `WITH gone AS (
         DELETE FROM customer_events WHERE tenant_id = $1 AND id IN (
           SELECT id FROM customer_events WHERE tenant_id = $1 AND occurred_at < $2 ORDER BY occurred_at LIMIT $3
         ) RETURNING 1
       ) SELECT count(*)::int AS n FROM gone`,
      [tenantId, cutoff, limit],
    );
    return row.n;
  }
}

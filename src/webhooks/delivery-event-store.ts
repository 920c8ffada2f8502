import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";
import type { DeliveryEventView, DeliveryStatus } from "../customers/customer-activity.js";

/** A message the service sent, or an interaction it recorded, that carries a provider message id. */
export interface KnownMessage {
  tenant_id: string;
  message_id: string;
  delivery_id: string | null;
  interaction_id: string | null;
  customer_id: string | null;
}

export interface NewDeliveryEvent {
  tenantId: string;
  id: string;
  providerMessageId: string;
  format: string;
  status: DeliveryStatus;
  providerStatus: string;
  eventRef: string;
  deliveryId: string | null;
  interactionId: string | null;
  customerId: string | null;
  occurredAt: Date;
}

/** Rows per INSERT: 11 parameters each stays far below the protocol's 65,535. */
const RECORD_CHUNK = 1000;

/** Delivery events, and the cross-tenant lookup that finds whose message a callback is about. */
export class DeliveryEventStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Per tenant and id, the one message it names: an outbound delivery (the service sent it) before
   * an interaction (a client said so through Respond), the newest first. Across tenants because the
   * callback names none; each tenant only ever receives events about ids it recorded itself.
   */
  async findMessagesAcrossTenants(messageIds: string[]): Promise<KnownMessage[]> {
    if (!messageIds.length) return [];
    return selectRows<KnownMessage>(
      this.db,
      `SELECT DISTINCT ON (tenant_id, message_id) tenant_id, message_id, delivery_id, interaction_id, customer_id
         FROM (
           SELECT tenant_id, provider_message_id AS message_id, id AS delivery_id, NULL::uuid AS interaction_id,
                  NULL::text AS customer_id, 0 AS preference, created_at AS at
             FROM notification_deliveries WHERE provider_message_id = ANY($1)
           UNION ALL
           SELECT tenant_id, provider_message_id, delivery_id, NULL::uuid, NULL::text, 1, started_at
             FROM notification_delivery_attempts WHERE provider_message_id = ANY($1)
           UNION ALL
           SELECT tenant_id, outcome_details ->> 'providerMessageId', NULL::uuid, id, customer_id, 2, created_at
             FROM interactions WHERE outcome_details ? 'providerMessageId' AND outcome_details ->> 'providerMessageId' = ANY($1)
         ) known
        ORDER BY tenant_id, message_id, preference, at DESC`,
      [messageIds],
    );
  }

  /**
   * All or none, in one transaction of multi-row statements (bind parameters are limited, a batch is
   * not); replays hit the unique index and are skipped. Returns how many rows were new.
   */
  async record(events: NewDeliveryEvent[]): Promise<number> {
    if (!events.length) return 0;
    return this.db.transaction(async (transaction) => {
      let inserted = 0;
      for (let start = 0; start < events.length; start += RECORD_CHUNK) {
        const bind: unknown[] = [];
        const tuples = events.slice(start, start + RECORD_CHUNK).map((e) => {
          const at = bind.length;
          bind.push(e.tenantId, e.id, e.providerMessageId, e.format, e.status, e.providerStatus, e.eventRef, e.deliveryId, e.interactionId, e.customerId, e.occurredAt);
          return `(${Array.from({ length: 11 }, (_, i) => `$${at + i + 1}`).join(", ")})`;
        });
        const rows = await execReturning<{ id: string }>(
          this.db,
          `INSERT INTO delivery_events (tenant_id, id, provider_message_id, format, status, provider_status, event_ref,
                                        delivery_id, interaction_id, customer_id, occurred_at)
           VALUES ${tuples.join(", ")}
           ON CONFLICT (tenant_id, provider_message_id, format, provider_status, event_ref) DO NOTHING
           RETURNING id`,
          bind,
          transaction,
        );
        inserted += rows.length;
      }
      return inserted;
    });
  }

  async recentForCustomer(tenantId: string, customerId: string, limit: number): Promise<DeliveryEventView[]> {
    const rows = await selectRows<{ provider_message_id: string; status: DeliveryStatus; format: string; occurred_at: Date }>(
      this.db,
      `SELECT provider_message_id, status, format, occurred_at FROM delivery_events
        WHERE tenant_id = $1 AND customer_id = $2 ORDER BY occurred_at DESC, id DESC LIMIT $3`,
      [tenantId, customerId, limit],
    );
    return rows.map((r) => ({ providerMessageId: r.provider_message_id, status: r.status, provider: r.format, occurredAt: r.occurred_at }));
  }
}

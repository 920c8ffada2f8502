import type { Sequelize } from "sequelize";
import { execReturning, selectRows } from "../platform/db.js";
import type { Destination } from "./outbound.js";

export type DeliveryStatus = "pending" | "sending" | "accepted" | "failed";

export interface DeliveryRow {
  tenant_id: string;
  id: string;
  kind: string;
  dedupe_key: string;
  destination_key: string;
  destination: Destination;
  status: DeliveryStatus;
  attempts: number;
  provider_message_id: string | null;
  last_error: string | null;
  lease_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  tenant_id: string;
  delivery_id: string;
  attempt: number;
  status: "accepted" | "failed";
  provider_message_id: string | null;
  http_status: number | null;
  error: string | null;
  started_at: Date;
  finished_at: Date;
}

export interface NewDelivery {
  id: string;
  kind: string;
  dedupeKey: string;
  destinationKey: string;
  destination: Destination;
}

/** Outbound deliveries, one per message (dedupe key) and destination, and each attempt at one. */
export class DeliveryStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * The delivery row of this message and destination, created when new, and whether this caller
   * may send it now: only when it is not accepted and no other dispatcher holds an unexpired lease
   * on it. The unique index and the conditional update make that true across processes.
   */
  async claim(tenantId: string, d: NewDelivery, leaseMs: number): Promise<{ row: DeliveryRow; claimed: boolean }> {
    await this.db.query(
      `INSERT INTO notification_deliveries (tenant_id, id, kind, dedupe_key, destination_key, destination, status)
       VALUES ($1, $2, $3, $4, $5, $6, 'pending') ON CONFLICT (tenant_id, dedupe_key, destination_key) DO NOTHING`,
      { bind: [tenantId, d.id, d.kind, d.dedupeKey, d.destinationKey, JSON.stringify(d.destination)] },
    );
    const [claimed] = await execReturning<DeliveryRow>(
      this.db,
      `UPDATE notification_deliveries SET status = 'sending', lease_until = now() + $4 * interval '1 millisecond', updated_at = now()
       WHERE tenant_id = $1 AND dedupe_key = $2 AND destination_key = $3
         AND (status IN ('pending', 'failed') OR (status = 'sending' AND lease_until < now()))
       RETURNING *`,
      [tenantId, d.dedupeKey, d.destinationKey, leaseMs],
    );
    if (claimed) return { row: claimed, claimed: true };
    const [row] = await selectRows<DeliveryRow>(
      this.db,
      "SELECT * FROM notification_deliveries WHERE tenant_id = $1 AND dedupe_key = $2 AND destination_key = $3",
      [tenantId, d.dedupeKey, d.destinationKey],
    );
    return { row, claimed: false };
  }

  async recordAttempt(tenantId: string, a: Omit<AttemptRow, "tenant_id" | "finished_at">): Promise<void> {
    await this.db.transaction(async (t) => {
      await this.db.query(
        `INSERT INTO notification_delivery_attempts (tenant_id, delivery_id, attempt, status, provider_message_id, http_status, error, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
        { bind: [tenantId, a.delivery_id, a.attempt, a.status, a.provider_message_id, a.http_status, a.error, a.started_at], transaction: t },
      );
      await this.db.query("UPDATE notification_deliveries SET attempts = $3, updated_at = now() WHERE tenant_id = $1 AND id = $2", {
        bind: [tenantId, a.delivery_id, a.attempt],
        transaction: t,
      });
    });
  }

  async finish(tenantId: string, id: string, status: "accepted" | "failed", messageId: string | null, error: string | null): Promise<void> {
    await this.db.query(
      `UPDATE notification_deliveries SET status = $3, provider_message_id = COALESCE($4, provider_message_id), last_error = $5,
         lease_until = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2`,
      { bind: [tenantId, id, status, messageId, error] },
    );
  }
}

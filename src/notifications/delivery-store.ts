import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { Destination, OutboundMessage } from "./outbound.js";

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
  destinationKey: string;
  destination: Destination;
}

/** A delivery the sweep took over, with its stored message (null when none was kept). */
export interface OrphanedDelivery {
  row: DeliveryRow;
  message: OutboundMessage | null;
}

/** Why a delivery whose message a GDPR erasure deleted ended. */
const WITHDRAWN = "withdrawn: the customer it is about was erased";
/** How long an unfinished row without a lease (written before leases were kept on pending rows) waits before the sweep takes it. */
const UNLEASED_GRACE = "10 minutes";
/** How long a stored message whose deliveries all ended is kept before the sweep deletes it: a dispatch is between its first and last write. */
const ENDED_MESSAGE_GRACE = "10 minutes";

/**
 * Outbound deliveries, one per message (dedupe key) and destination, each attempt at one, and the
 * outbox: the message itself, stored until the last of its deliveries has ended, so that one whose
 * process died is sent by another (docs/notifications.md, "Redelivery").
 */
export class DeliveryStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Before any destination is tried: the message (unless it holds a credential, which is never
   * stored) and a pending row per destination, leased, in one transaction. The message row is
   * written first, so a finishing dispatch of the same key, which locks it, sees these rows.
   */
  async prepare(tenantId: string, message: OutboundMessage, deliveries: readonly NewDelivery[], leaseMs: number): Promise<void> {
    await this.db.transaction(async (t) => {
      if (!message.holdsCredential) {
        const { json, attachments } = storedForm(message);
        await this.db.query(
          `INSERT INTO outbound_messages (tenant_id, dedupe_key, message, attachments, customer_id) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (tenant_id, dedupe_key) DO UPDATE SET message = EXCLUDED.message, attachments = EXCLUDED.attachments,
             customer_id = EXCLUDED.customer_id, created_at = now()`,
          { bind: [tenantId, message.dedupeKey, json, attachments, message.customerId ?? null], transaction: t },
        );
      }
      await this.db.query(
        `INSERT INTO notification_deliveries (tenant_id, id, kind, dedupe_key, destination_key, destination, status, lease_until)
         SELECT $1, d.id, $2, $3, d.key, d.destination, 'pending', now() + $5 * interval '1 millisecond'
         FROM jsonb_to_recordset($4::jsonb) AS d(id uuid, key text, destination jsonb)
         ON CONFLICT (tenant_id, dedupe_key, destination_key) DO NOTHING`,
        {
          bind: [tenantId, message.kind, message.dedupeKey, JSON.stringify(deliveries.map((d) => ({ id: d.id, key: d.destinationKey, destination: d.destination }))), leaseMs],
          transaction: t,
        },
      );
    });
  }

  /**
   * The delivery row of this message and destination, and whether this caller may send it now:
   * only when it is not accepted and no other dispatcher holds an unexpired lease on it. The
   * conditional update makes that true across processes.
   */
  async claim(tenantId: string, dedupeKey: string, destinationKey: string, leaseMs: number): Promise<{ row: DeliveryRow; claimed: boolean }> {
    const [claimed] = await execReturning<DeliveryRow>(
      this.db,
      `UPDATE notification_deliveries SET status = 'sending', lease_until = now() + $4 * interval '1 millisecond', updated_at = now()
       WHERE tenant_id = $1 AND dedupe_key = $2 AND destination_key = $3
         AND (status IN ('pending', 'failed') OR (status = 'sending' AND lease_until < now()))
       RETURNING *`,
      [tenantId, dedupeKey, destinationKey, leaseMs],
    );
    if (claimed) return { row: claimed, claimed: true };
    const [row] = await selectRows<DeliveryRow>(
      this.db,
      "SELECT * FROM notification_deliveries WHERE tenant_id = $1 AND dedupe_key = $2 AND destination_key = $3",
      [tenantId, dedupeKey, destinationKey],
    );
    return { row, claimed: false };
  }

  /** Moves the leases of rows this process is sending forward; a row another process took over meanwhile is left alone. */
  async renewLeases(rows: ReadonlyArray<{ tenantId: string; id: string }>, leaseMs: number): Promise<void> {
    await this.db.query(
      `UPDATE notification_deliveries d SET lease_until = now() + $3 * interval '1 millisecond'
       FROM unnest($1::uuid[], $2::uuid[]) AS h(tenant_id, id)
       WHERE d.tenant_id = h.tenant_id AND d.id = h.id AND d.status = 'sending'`,
      { bind: [rows.map((r) => r.tenantId), rows.map((r) => r.id), leaseMs] },
    );
  }

  /**
   * Takes over, across tenants, up to `limit` unfinished deliveries whose lease ran out (their
   * process died, or stopped before they ended), leasing them to the caller, with their messages.
   * SKIP LOCKED and the conditional update let several processes sweep at once, each row once.
   */
  async claimOrphaned(limit: number, leaseMs: number): Promise<OrphanedDelivery[]> {
    const rows = await execReturning<DeliveryRow>(
      this.db,
      `UPDATE notification_deliveries d SET status = 'sending', lease_until = now() + $2 * interval '1 millisecond', updated_at = now()
       FROM (
         SELECT tenant_id, id FROM notification_deliveries
         WHERE status IN ('pending', 'sending')
           AND (lease_until < now() OR (lease_until IS NULL AND updated_at < now() - interval '${UNLEASED_GRACE}'))
         ORDER BY lease_until NULLS FIRST LIMIT $1 FOR UPDATE SKIP LOCKED
       ) s
       WHERE d.tenant_id = s.tenant_id AND d.id = s.id
       RETURNING d.*`,
      [limit, leaseMs],
    );
    if (!rows.length) return [];
    const stored = await selectRows<{ tenant_id: string; dedupe_key: string; message: StoredMessage; attachments: Buffer[] }>(
      this.db,
      `SELECT m.tenant_id, m.dedupe_key, m.message, m.attachments FROM outbound_messages m
       JOIN unnest($1::uuid[], $2::text[]) AS k(tenant_id, dedupe_key) ON m.tenant_id = k.tenant_id AND m.dedupe_key = k.dedupe_key`,
      [rows.map((r) => r.tenant_id), rows.map((r) => r.dedupe_key)],
    );
    const messages = new Map(stored.map((s) => [`${s.tenant_id}\0${s.dedupe_key}`, messageOf(s.dedupe_key, s.message, s.attachments)]));
    return rows.map((row) => ({ row, message: messages.get(`${row.tenant_id}\0${row.dedupe_key}`) ?? null }));
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

  /**
   * Ends a delivery, and deletes its stored message when no other delivery of it is unfinished.
   * The message row is locked first, so of two deliveries of one message that end at once the
   * second sees the first's end, and one of them deletes it.
   */
  async finish(tenantId: string, id: string, status: "accepted" | "failed", messageId: string | null, error: string | null): Promise<void> {
    await this.db.transaction(async (t) => {
      await this.db.query(
        `SELECT 1 FROM outbound_messages WHERE tenant_id = $1
           AND dedupe_key = (SELECT dedupe_key FROM notification_deliveries WHERE tenant_id = $1 AND id = $2) FOR UPDATE`,
        { bind: [tenantId, id], transaction: t },
      );
      const [ended] = await execReturning<{ dedupe_key: string }>(
        this.db,
        `UPDATE notification_deliveries SET status = $3, provider_message_id = COALESCE($4, provider_message_id), last_error = $5,
           lease_until = NULL, updated_at = now() WHERE tenant_id = $1 AND id = $2 RETURNING dedupe_key`,
        [tenantId, id, status, messageId, error],
        t,
      );
      if (!ended) return;
      await this.db.query(
        `DELETE FROM outbound_messages WHERE tenant_id = $1 AND dedupe_key = $2
           AND NOT EXISTS (SELECT 1 FROM notification_deliveries WHERE tenant_id = $1 AND dedupe_key = $2 AND status IN ('pending', 'sending'))`,
        { bind: [tenantId, ended.dedupe_key], transaction: t },
      );
    });
  }

  /**
   * A GDPR erasure's share (a CustomerDataHolder): the customer's stored messages are deleted, and
   * their unfinished deliveries end as failed, so neither the sweep nor a sender waiting to retry
   * sends them. How many messages.
   */
  async eraseCustomer(tenantId: string, customerId: string, t?: Transaction): Promise<number> {
    const [row] = await selectRows<{ n: number }>(
      this.db,
      `WITH m AS (DELETE FROM outbound_messages WHERE tenant_id = $1 AND customer_id = $2 RETURNING dedupe_key),
       d AS (UPDATE notification_deliveries SET status = 'failed', last_error = $3, lease_until = NULL, updated_at = now()
             WHERE tenant_id = $1 AND dedupe_key IN (SELECT dedupe_key FROM m) AND status IN ('pending', 'sending'))
       SELECT count(*)::int AS n FROM m`,
      [tenantId, customerId, WITHDRAWN],
      t,
    );
    return row.n;
  }

  async countCustomer(tenantId: string, customerId: string): Promise<number> {
    const [row] = await selectRows<{ n: number }>(this.db, "SELECT count(*)::int AS n FROM outbound_messages WHERE tenant_id = $1 AND customer_id = $2", [tenantId, customerId]);
    return row.n;
  }

  /** The row's status and last error: a sender asks before each retry whether it is still its to send. */
  async state(tenantId: string, id: string): Promise<Pick<DeliveryRow, "status" | "last_error"> | null> {
    const [row] = await selectRows<Pick<DeliveryRow, "status" | "last_error">>(this.db, "SELECT status, last_error FROM notification_deliveries WHERE tenant_id = $1 AND id = $2", [tenantId, id]);
    return row ?? null;
  }

  /**
   * Stored messages none of whose deliveries is unfinished, older than a dispatch takes: a repeat
   * dispatch of a message every destination had accepted stores it and sends nothing.
   */
  async deleteEndedMessages(): Promise<number> {
    const rows = await execReturning<{ dedupe_key: string }>(
      this.db,
      `DELETE FROM outbound_messages m WHERE m.created_at < now() - interval '${ENDED_MESSAGE_GRACE}'
         AND NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.tenant_id = m.tenant_id AND d.dedupe_key = m.dedupe_key AND d.status IN ('pending', 'sending'))
       RETURNING m.dedupe_key`,
      [],
    );
    return rows.length;
  }
}

/** A message as `outbound_messages` keeps it: its bytes beside the JSON, not inside it. */
interface StoredMessage {
  kind: string;
  subject: string;
  text: string;
  payload: Record<string, unknown>;
  attachments: Array<{ fileName: string; contentType: string }>;
}

function storedForm(m: OutboundMessage): { json: string; attachments: Buffer[] } {
  const files = m.attachments ?? [];
  const json: StoredMessage = {
    kind: m.kind,
    subject: m.subject,
    text: m.text,
    payload: m.payload,
    attachments: files.map((a) => ({ fileName: a.fileName, contentType: a.contentType })),
  };
  return { json: JSON.stringify(json), attachments: files.map((a) => Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength)) };
}

function messageOf(dedupeKey: string, m: StoredMessage, bytes: Buffer[]): OutboundMessage {
  return {
    kind: m.kind,
    dedupeKey,
    subject: m.subject,
    text: m.text,
    payload: m.payload,
    ...(m.attachments.length && { attachments: m.attachments.map((a, i) => ({ ...a, content: new Uint8Array(bytes[i]) })) }),
  };
}

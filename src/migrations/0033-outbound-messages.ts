import type { MigrationFn } from "../platform/migrator.js";

/**
 * The outbox of outbound deliveries (src/notifications/dispatcher.ts, docs/notifications.md
 * "Redelivery"). A message lived only in the memory of the process sending it, so a delivery whose
 * process died mid-series stayed `sending` for good and was never sent. Now the message is stored
 * once per dedupe key before any destination is tried, beside its delivery rows, and deleted when
 * the last of them has ended; a sweep sends the rows whose lease ran out.
 *
 * - `message`: kind, subject, text, payload and the attachments' names and types; their bytes in
 *   `attachments`, in the same order, so a report's PDF is not stored as base64 text. `json`, not
 *   `jsonb`: a webhook sent again carries the payload's keys in their first order.
 * - `customer_id`: the customer whose data the message carries (a trigger's event), so that a GDPR
 *   erasure deletes it before it is sent (docs/portability.md).
 * - The partial index on deliveries serves the sweep: only unfinished rows are in it.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE outbound_messages (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      dedupe_key text NOT NULL,
      message json NOT NULL,
      attachments bytea[] NOT NULL DEFAULT '{}',
      customer_id text,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, dedupe_key)
    );
    CREATE INDEX outbound_messages_customer ON outbound_messages (tenant_id, customer_id) WHERE customer_id IS NOT NULL;
    CREATE INDEX notification_deliveries_unfinished ON notification_deliveries (lease_until) WHERE status IN ('pending', 'sending');
  `);
};

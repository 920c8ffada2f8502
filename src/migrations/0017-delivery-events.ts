import type { MigrationFn } from "../platform/migrator.js";

/**
 * Delivery feedback from providers (spec 4.18): one row per reported status, in the tenant that sent
 * the message or recorded the interaction it names.
 *
 * - The unique index (tenant, message id, format, provider status, event ref) is what records a
 *   replayed or retried callback once, even when two processes receive it at the same time.
 * - `customer_id` is copied from the interaction at write time, so a profile reads one index.
 * - The provider message id lookups run across tenants (the callback names no tenant), so the
 *   columns that hold one get an index of their own: the two notification tables, and an
 *   interaction's `outcomeDetails.providerMessageId` (how Respond records the message that carried an offer).
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE delivery_events (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      provider_message_id text NOT NULL,
      format text NOT NULL,
      status text NOT NULL CHECK (status IN ('delivered', 'bounced', 'opened', 'clicked', 'failed')),
      provider_status text NOT NULL,
      event_ref text NOT NULL,
      delivery_id uuid,
      interaction_id uuid,
      customer_id text,
      occurred_at timestamptz NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      UNIQUE (tenant_id, provider_message_id, format, provider_status, event_ref),
      FOREIGN KEY (tenant_id, delivery_id) REFERENCES notification_deliveries (tenant_id, id) ON DELETE CASCADE,
      FOREIGN KEY (tenant_id, interaction_id) REFERENCES interactions (tenant_id, id) ON DELETE CASCADE
    );
    CREATE INDEX delivery_events_customer ON delivery_events (tenant_id, customer_id, occurred_at DESC) WHERE customer_id IS NOT NULL;

    CREATE INDEX notification_deliveries_provider_message ON notification_deliveries (provider_message_id) WHERE provider_message_id IS NOT NULL;
    CREATE INDEX notification_delivery_attempts_provider_message ON notification_delivery_attempts (provider_message_id) WHERE provider_message_id IS NOT NULL;
    CREATE INDEX interactions_provider_message ON interactions ((outcome_details ->> 'providerMessageId')) WHERE outcome_details ? 'providerMessageId';
  `);
};

import type { MigrationFn } from "../platform/migrator.js";

/**
 * Inbound customer events (spec 2.14, 4.17), the trigger rules evaluated against them, journeys
 * and their enrollments (spec 4.21). One active enrollment per customer and journey is a partial
 * unique index, so that concurrent triggers in several processes enrol a customer once
 * (INSERT ... ON CONFLICT DO NOTHING), never by check-then-insert.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE customer_events (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      event_type text NOT NULL,
      customer_id text,
      session_id text,
      properties jsonb NOT NULL DEFAULT '{}'::jsonb,
      occurred_at timestamptz NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX customer_events_customer ON customer_events (tenant_id, customer_id, occurred_at DESC) WHERE customer_id IS NOT NULL;

    CREATE TABLE journeys (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      -- [{type, flow?, count?}] in order.
      steps jsonb NOT NULL DEFAULT '[]'::jsonb,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX journeys_live_name ON journeys (tenant_id, name) WHERE deleted_at IS NULL;

    CREATE TABLE trigger_rules (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      event_type text NOT NULL,
      conditions jsonb NOT NULL DEFAULT '{}'::jsonb,
      -- {type: journey, journeyId} or {type: webhook, providerId | target}.
      action jsonb NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX trigger_rules_live_name ON trigger_rules (tenant_id, name) WHERE deleted_at IS NULL;
    CREATE INDEX trigger_rules_active ON trigger_rules (tenant_id, event_type) WHERE status = 'active' AND deleted_at IS NULL;

    CREATE TABLE journey_enrollments (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      journey_id uuid NOT NULL,
      customer_id text NOT NULL,
      status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'completed', 'exited')),
      trigger_id uuid,
      event_id uuid,
      -- [{type, status, recommendationId?, offerIds, error?}] of the steps run on enrollment.
      steps jsonb NOT NULL DEFAULT '[]'::jsonb,
      enrolled_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, journey_id) REFERENCES journeys (tenant_id, id) ON DELETE CASCADE
    );
    CREATE UNIQUE INDEX journey_enrollments_active ON journey_enrollments (tenant_id, journey_id, customer_id) WHERE status = 'active';
  `);
};

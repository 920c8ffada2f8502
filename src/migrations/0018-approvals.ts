import type { MigrationFn } from "../platform/migrator.js";

/**
 * Approval requests (spec 2.18, 3.5, 4.10; docs/approvals.md), AI recommendations, and the tenant
 * setting that makes publishing a decision flow wait for an approval.
 *
 * A request's stages are a jsonb array on its row rather than a table of their own: they are read
 * and decided only with the request, under the request's row lock, which is what keeps two
 * approvers of the last stage from both applying the payload. `consumed_at` marks the publish a
 * publish approval authorized; the partial index finds the unused ones of a flow.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE approval_requests (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      entity_type text NOT NULL,
      entity_id uuid,
      action text NOT NULL CHECK (action IN ('create', 'update', 'delete', 'publish')),
      payload jsonb NOT NULL DEFAULT '{}'::jsonb,
      -- [{requiredRole, status, decidedBy, decidedByName, decidedAt, comment}] in review order.
      stages jsonb NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
      comment text NOT NULL DEFAULT '',
      requested_by text,
      requested_by_name text NOT NULL,
      resolved_at timestamptz,
      consumed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE INDEX approval_requests_pending ON approval_requests (created_at) WHERE status = 'pending';
    CREATE INDEX approval_requests_unused_publish ON approval_requests (tenant_id, entity_id)
      WHERE action = 'publish' AND status = 'approved' AND consumed_at IS NULL;

    CREATE TABLE ai_recommendations (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      entity_type text NOT NULL,
      entity_id uuid NOT NULL,
      patch jsonb NOT NULL DEFAULT '{}'::jsonb,
      rationale text NOT NULL DEFAULT '',
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied')),
      applied_at timestamptz,
      created_by_name text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );

    ALTER TABLE tenant_settings ADD COLUMN require_publish_approval boolean NOT NULL DEFAULT false;
  `);
};

import type { MigrationFn } from "../platform/migrator.js";

/**
 * Customer lifetime value and the profile's identities (docs/clv.md, docs/unified-profile.md).
 * One CLV record per customer, replaced on every computation; `segment_since` keeps when the customer
 * entered the current CLV segment, which the profile reports as segment membership. The segment index
 * serves `POST /clv/compute {segment}`, which pages customers by id. Identity links are the customer's
 * other identifiers (email, device, CRM id), unique per tenant, customer, type and value.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE clv_records (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      customer_id text NOT NULL,
      clv_score integer NOT NULL CHECK (clv_score BETWEEN 0 AND 100),
      predicted_revenue double precision NOT NULL,
      churn_probability double precision NOT NULL CHECK (churn_probability BETWEEN 0 AND 1),
      rfm_recency integer NOT NULL,
      rfm_frequency integer NOT NULL,
      rfm_monetary double precision NOT NULL,
      segment text NOT NULL CHECK (segment IN ('high', 'medium', 'low', 'at_risk')),
      segment_since timestamptz NOT NULL,
      computed_at timestamptz NOT NULL,
      PRIMARY KEY (tenant_id, customer_id)
    );
    CREATE INDEX clv_records_segment ON clv_records (tenant_id, segment, customer_id);

    CREATE TABLE customer_identities (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      customer_id text NOT NULL,
      type text NOT NULL,
      value text NOT NULL,
      confidence double precision NOT NULL DEFAULT 1 CHECK (confidence BETWEEN 0 AND 1),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id)
    );
    CREATE UNIQUE INDEX customer_identities_link ON customer_identities (tenant_id, customer_id, type, value);
  `);
};

import type { MigrationFn } from "../platform/migrator.js";

/**
 * The offer catalog. Categories, sub-categories, channels, placements and outcome types share one
 * shape and one table (`kind` tells them apart). Names (and outcome-type keys) are unique among live
 * rows only, so a deleted entry's name can be reused; restoring it then answers 409 if it was.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE catalog_entries (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      kind text NOT NULL CHECK (kind IN ('category', 'sub_category', 'channel', 'placement', 'outcome_type')),
      name text NOT NULL,
      description text NOT NULL DEFAULT '',
      key text,
      category_id uuid,
      channel_id uuid,
      type text,
      category text,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, category_id) REFERENCES catalog_entries (tenant_id, id),
      FOREIGN KEY (tenant_id, channel_id) REFERENCES catalog_entries (tenant_id, id)
    );
    CREATE UNIQUE INDEX catalog_entries_live_name ON catalog_entries (tenant_id, kind, name) WHERE deleted_at IS NULL;
    CREATE UNIQUE INDEX catalog_entries_live_key ON catalog_entries (tenant_id, kind, key) WHERE deleted_at IS NULL AND key IS NOT NULL;
    CREATE INDEX catalog_entries_kind ON catalog_entries (tenant_id, kind, id DESC);

    CREATE TABLE offers (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      name text NOT NULL,
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'paused', 'archived')),
      category_id uuid,
      sub_category_id uuid,
      category text NOT NULL DEFAULT 'engagement',
      group_name text NOT NULL DEFAULT '',
      priority integer NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
      business_value double precision NOT NULL DEFAULT 50 CHECK (business_value BETWEEN 0 AND 100),
      mandatory boolean NOT NULL DEFAULT false,
      mandatory_reason text,
      mandatory_expires_at timestamptz,
      mandatory_approved_by text,
      emergency_excluded boolean NOT NULL DEFAULT false,
      description text NOT NULL DEFAULT '',
      short_desc text NOT NULL DEFAULT '',
      eligibility jsonb NOT NULL DEFAULT '{}'::jsonb,
      budget jsonb NOT NULL DEFAULT '{}'::jsonb,
      schedule jsonb NOT NULL DEFAULT '{}'::jsonb,
      tags text[] NOT NULL DEFAULT '{}',
      product_type text NOT NULL DEFAULT '',
      margin double precision,
      revenue_value double precision,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, category_id) REFERENCES catalog_entries (tenant_id, id),
      FOREIGN KEY (tenant_id, sub_category_id) REFERENCES catalog_entries (tenant_id, id)
    );
    CREATE UNIQUE INDEX offers_live_name ON offers (tenant_id, name) WHERE deleted_at IS NULL;

    CREATE TABLE creatives (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      offer_id uuid NOT NULL,
      channel_id uuid,
      placement_id uuid,
      name text NOT NULL,
      status text NOT NULL DEFAULT 'active',
      content jsonb NOT NULL DEFAULT '{}'::jsonb,
      version integer NOT NULL DEFAULT 1,
      deleted_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, offer_id) REFERENCES offers (tenant_id, id),
      FOREIGN KEY (tenant_id, channel_id) REFERENCES catalog_entries (tenant_id, id),
      FOREIGN KEY (tenant_id, placement_id) REFERENCES catalog_entries (tenant_id, id)
    );
    CREATE INDEX creatives_offer ON creatives (tenant_id, offer_id);
  `);
};

import type { MigrationFn } from "../platform/migrator.js";

/**
 * Content items with review and versions (spec 2.17, 3.2, 4.8; docs/content.md).
 *
 * `content_versions` holds one snapshot per version of an item, written in the same transaction as
 * the item change, so the unique (tenant_id, content_id, version) key is what keeps two concurrent
 * updates from both claiming a version. `published_version` names the snapshot Recommend serves:
 * edits after a publish never go live without their own review.
 *
 * Creatives gain `content_id`: the item whose published version Recommend serves with them.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    CREATE TABLE content_items (
      tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
      id uuid NOT NULL,
      title text NOT NULL,
      body text NOT NULL,
      content_type text NOT NULL DEFAULT 'text',
      status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'in_review', 'approved', 'published', 'archived')),
      version integer NOT NULL DEFAULT 1,
      parent_template_id uuid,
      source_id uuid,
      submitted_by uuid,
      approved_by uuid,
      approved_version integer,
      published_version integer,
      published_at timestamptz,
      rejection_reason text,
      created_by uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, id),
      FOREIGN KEY (tenant_id, parent_template_id) REFERENCES content_items (tenant_id, id),
      FOREIGN KEY (tenant_id, source_id) REFERENCES content_items (tenant_id, id)
    );
    CREATE INDEX content_items_status ON content_items (tenant_id, status, id);

    CREATE TABLE content_versions (
      tenant_id uuid NOT NULL,
      content_id uuid NOT NULL,
      version integer NOT NULL,
      title text NOT NULL,
      body text NOT NULL,
      content_type text NOT NULL,
      change text NOT NULL CHECK (change IN ('create', 'update', 'revert')),
      reverted_from integer,
      published_at timestamptz,
      created_by uuid,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant_id, content_id, version),
      FOREIGN KEY (tenant_id, content_id) REFERENCES content_items (tenant_id, id) ON DELETE CASCADE
    );

    ALTER TABLE creatives ADD COLUMN content_id uuid,
      ADD FOREIGN KEY (tenant_id, content_id) REFERENCES content_items (tenant_id, id);
    CREATE INDEX creatives_content ON creatives (tenant_id, content_id) WHERE content_id IS NOT NULL;
  `);
};

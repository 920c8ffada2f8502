import type { MigrationFn } from "../platform/migrator.js";

/**
 * Content review by OAuth clients, and publish snapshots (spec 3.2; docs/content.md).
 *
 * `submitted_by` and `approved_by` name an actor as the approvals do (approvals/actor.ts): a user
 * id, or `oauth_client:<clientId>`, which is not a uuid, so both become text. Existing values are
 * user ids and keep their meaning.
 *
 * A publish writes a new version snapshot holding the approved content (`change` `publish`,
 * `reverted_from` naming the version it copied). Items published before this migration keep
 * pointing at the stamped snapshot they went live with, which still serves.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE content_items ALTER COLUMN submitted_by TYPE text, ALTER COLUMN approved_by TYPE text;
    ALTER TABLE content_versions DROP CONSTRAINT content_versions_change_check,
      ADD CONSTRAINT content_versions_change_check CHECK (change IN ('create', 'update', 'revert', 'publish'));
  `);
};

import type { MigrationFn } from "../platform/migrator.js";

/**
 * The model registry (spec 3.3, docs/models.md).
 *
 * One champion per family is the database's rule, not only the service's: a partial unique index
 * on (tenant_id, family) over live champions, so no interleaving of writers, however it gets past
 * the service's checks, can leave a family with two. The status list becomes a CHECK for the same
 * reason. Before this migration no route could change registry_status, so every stored row is
 * `draft` and both constraints hold on existing data.
 *
 * `recommendations.scored_by` lists the models that scored a decision (the serving model, then the
 * shadow models scored beside it), which is what the rollback guard counts as a model's scored
 * decisions. Existing recommendations get an empty list: what scored them was never stored. The GIN
 * index keeps the guard's count an index lookup on a tenant with millions of decisions.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    ALTER TABLE algorithm_models
      ADD CONSTRAINT algorithm_models_registry_status
      CHECK (registry_status IN ('draft', 'shadow', 'challenger', 'champion', 'archived'));
    CREATE UNIQUE INDEX algorithm_models_one_champion ON algorithm_models (tenant_id, family)
      WHERE registry_status = 'champion' AND deleted_at IS NULL;
    ALTER TABLE recommendations ADD COLUMN scored_by text[] NOT NULL DEFAULT '{}';
    CREATE INDEX recommendations_scored_by ON recommendations USING gin (scored_by);
  `);
};

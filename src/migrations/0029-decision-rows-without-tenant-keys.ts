import type { MigrationFn } from "../platform/migrator.js";

/**
 * The three tables every Recommend writes to (recommendations, interactions, decision_traces: five
 * rows a decision) lose their foreign key to `tenants`. The key's check locked the one tenant row
 * for every inserted row, FOR KEY SHARE, from every concurrent writer, and cost PostgreSQL a
 * quarter of its CPU per Recommend (docs/performance.md, thirteenth session). The service writes
 * these rows only for the tenant the request authenticated as, so the check never refused one.
 *
 * What the keys' ON DELETE CASCADE did, a trigger does: an operator's `DELETE FROM tenants` removes
 * the tenant's decisions, outcomes and traces in the deleting transaction (their own children,
 * delivery events and narratives, go by their keys to these tables). Given up: a decision still in
 * flight while its tenant is deleted can leave its rows behind, under a tenant id that is never used
 * again and that no request can name.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    DO $$
    DECLARE c record;
    BEGIN
      FOR c IN
        SELECT conrelid::regclass AS tbl, conname FROM pg_constraint
        WHERE contype = 'f' AND confrelid = 'tenants'::regclass
          AND conrelid IN ('recommendations'::regclass, 'interactions'::regclass, 'decision_traces'::regclass)
      LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', c.tbl, c.conname);
      END LOOP;
    END $$;
    CREATE FUNCTION tenants_delete_decision_rows() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM decision_traces WHERE tenant_id = OLD.id;
      DELETE FROM interactions WHERE tenant_id = OLD.id;
      DELETE FROM recommendations WHERE tenant_id = OLD.id;
      RETURN OLD;
    END
    $$;
    CREATE TRIGGER tenants_delete_decision_rows AFTER DELETE ON tenants
      FOR EACH ROW EXECUTE FUNCTION tenants_delete_decision_rows();
  `);
};

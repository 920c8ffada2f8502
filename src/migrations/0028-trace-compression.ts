import type { MigrationFn } from "../platform/migrator.js";

/**
 * Decision traces are written as their JSON's bytes and compressed by PostgreSQL (lz4) instead
 * of gzipped by the service on its event loop (issue 18: gzip cost about 5% of a Recommend's CPU).
 * Rows written before keep their gzip; the reader tells the two apart by gzip's magic bytes.
 * A server built without lz4 keeps its default (pglz), which is slower but still off the service.
 */
export const up: MigrationFn = async ({ context: db }) => {
  await db.query(`
    DO $$
    BEGIN
      ALTER TABLE decision_traces ALTER COLUMN trace SET COMPRESSION lz4;
    EXCEPTION WHEN feature_not_supported THEN
      RAISE NOTICE 'lz4 is not available: decision traces keep the default compression';
    END $$;
    COMMENT ON COLUMN decision_traces.trace IS 'the trace record JSON (src/decisions/trace-record.ts) as UTF-8, compressed by PostgreSQL; gzip of it (or of the explanation itself before 0006) on rows written before 0028';
  `);
};

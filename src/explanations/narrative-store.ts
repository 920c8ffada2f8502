import type { Sequelize } from "sequelize";
import { selectRows, type Transaction } from "../platform/db.js";
import type { WriterIdentity } from "./narrative-writer.js";

/** How long a narrative is served from the cache (spec 8: decision explanation cache, 7 days). */
export const NARRATIVE_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** The cache key of spec 4.11: tenant, trace, mode, model (the writer's) and inputs hash. */
export interface NarrativeKey {
  traceId: string;
  mode: string;
  writerModel: string;
  inputsHash: string;
}

export interface NarrativeRow {
  narrative: string;
  writer: WriterIdentity;
  facts: Record<string, unknown>;
  generated_at: Date;
  expires_at: Date;
}

/**
 * The narrative cache, in Postgres (migration 0014): shared by every process, present without
 * Redis, and removed with its trace by the foreign key. Expired rows are never read, and a tenant's
 * expired rows are deleted whenever it writes one.
 */
export class NarrativeStore {
  constructor(private readonly db: Sequelize) {}

  async find(tenantId: string, key: NarrativeKey): Promise<NarrativeRow | null> {
    const [row] = await selectRows<NarrativeRow>(
      this.db,
      `SELECT narrative, writer, facts, generated_at, expires_at FROM decision_narratives
       WHERE tenant_id = $1 AND trace_id = $2 AND mode = $3 AND writer_model = $4 AND inputs_hash = $5 AND expires_at > now()`,
      [tenantId, key.traceId, key.mode, key.writerModel, key.inputsHash],
    );
    return row ?? null;
  }

  /** Stores (or replaces, after `noCache`) a narrative, and prunes the tenant's expired ones. */
  async save(t: Transaction, tenantId: string, key: NarrativeKey, row: Omit<NarrativeRow, "expires_at">): Promise<Date> {
    const expiresAt = new Date(row.generated_at.getTime() + NARRATIVE_TTL_MS);
    await this.db.query("DELETE FROM decision_narratives WHERE tenant_id = $1 AND expires_at <= now()", { bind: [tenantId], transaction: t });
    await this.db.query(
      `INSERT INTO decision_narratives (tenant_id, trace_id, mode, writer_model, inputs_hash, narrative, writer, facts, generated_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (tenant_id, trace_id, mode, writer_model, inputs_hash) DO UPDATE
         SET narrative = $6, writer = $7, facts = $8, generated_at = $9, expires_at = $10`,
      {
        bind: [tenantId, key.traceId, key.mode, key.writerModel, key.inputsHash, row.narrative, JSON.stringify(row.writer), JSON.stringify(row.facts), row.generated_at, expiresAt],
        transaction: t,
      },
    );
    return expiresAt;
  }
}

import type { Sequelize } from "sequelize";
import { selectRows, type Transaction } from "../platform/db.js";

/**
 * The decisions read model the model registry's rollback guard asks (docs/models.md): how many of
 * the tenant's stored decisions a model scored, as the serving model or as a shadow
 * (recommendations.scored_by). Counting stops at `atMost`, which is all the guard needs, so a
 * model with millions of decisions costs no more than one with exactly enough.
 */
export async function countScoredDecisions(db: Sequelize, tenantId: string, modelId: string, atMost: number, t?: Transaction): Promise<number> {
  if (atMost <= 0) return 0;
  const [row] = await selectRows<{ n: number }>(
    db,
    `SELECT count(*)::int AS n FROM (
       SELECT 1 FROM recommendations WHERE tenant_id = $1 AND scored_by @> ARRAY[$2]::text[] LIMIT $3
     ) scored`,
    [tenantId, modelId, atMost],
    t,
  );
  return row.n;
}

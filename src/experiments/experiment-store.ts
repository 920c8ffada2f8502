import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import type { ChallengerArm } from "../core/index.js";

export const EXPERIMENT_STATUSES = ["draft", "active", "paused", "archived"] as const;
export type ExperimentStatus = (typeof EXPERIMENT_STATUSES)[number];

/** An experiments row as stored. */
export interface ExperimentRow {
  tenant_id: string;
  id: string;
  key: string;
  name: string;
  flow_id: string | null;
  champion_model_id: string;
  champion_pct: number;
  challengers: ChallengerArm[];
  holdout_percent: number;
  status: ExperimentStatus;
  auto_promote: boolean;
  promote_threshold: number;
  promote_after_days: number;
  started_at: Date | null;
  promoted_model_id: string | null;
  promoted_at: Date | null;
  version: number;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns a write sets. */
export type ExperimentValues = Partial<Omit<ExperimentRow, "tenant_id" | "version" | "created_at" | "updated_at">>;

/** Samples and conversions of one variant, as the results count them. */
export interface VariantCountRow {
  variant: string;
  samples: number;
  conversions: number;
}

const JSON_COLUMNS = new Set(["challengers"]);
const bindValue = (column: string, value: unknown) => (JSON_COLUMNS.has(column) ? JSON.stringify(value) : value);

/** Experiments of a tenant, and the counts of their results. Tenant first, always. */
export class ExperimentStore {
  constructor(private readonly db: Sequelize) {}

  /** A write: the tenant's write lock first (tenant-write-lock.ts), retried on transient conflicts. */
  transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>): Promise<T> {
    return tenantWriteTransaction(this.db, tenantId, fn);
  }

  async insert(t: Transaction, tenantId: string, values: ExperimentValues & { id: string }): Promise<ExperimentRow> {
    const columns = ["tenant_id", ...Object.keys(values)];
    const bind = [tenantId, ...Object.entries(values).map(([c, v]) => bindValue(c, v))];
    const [row] = await execReturning<ExperimentRow>(
      this.db,
      `INSERT INTO experiments (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  /** Sets the given columns, updated_at and the next version. */
  async update(t: Transaction, tenantId: string, id: string, values: ExperimentValues): Promise<ExperimentRow> {
    const bind: unknown[] = [tenantId, id];
    const sets = Object.entries(values).map(([column, value]) => {
      bind.push(bindValue(column, value));
      return `${column} = $${bind.length}`;
    });
    sets.push("updated_at = now()", "version = version + 1");
    const [row] = await execReturning<ExperimentRow>(
      this.db,
      `UPDATE experiments SET ${sets.join(", ")} WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  /** A live experiment, locked for update inside a write. */
  async find(tenantId: string, id: string, t?: Transaction): Promise<ExperimentRow | null> {
    const [row] = await selectRows<ExperimentRow>(
      this.db,
      `SELECT * FROM experiments WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  /** A keyset page, newest first, one extra row telling whether more exist. */
  page(tenantId: string, page: CursorPageRequest, status: ExperimentStatus | null): Promise<ExperimentRow[]> {
    const bind: unknown[] = [tenantId, page.limit + 1];
    let where = "tenant_id = $1 AND deleted_at IS NULL";
    if (page.cursor) {
      bind.push(page.cursor);
      where += ` AND id < $${bind.length}`;
    }
    if (status) {
      bind.push(status);
      where += ` AND status = $${bind.length}`;
    }
    return selectRows<ExperimentRow>(this.db, `SELECT * FROM experiments WHERE ${where} ORDER BY id DESC LIMIT $2`, bind);
  }

  /** The active experiments, oldest first: the order in which they claim decisions. */
  active(tenantId: string): Promise<ExperimentRow[]> {
    return selectRows<ExperimentRow>(
      this.db,
      "SELECT * FROM experiments WHERE tenant_id = $1 AND status = 'active' AND deleted_at IS NULL ORDER BY created_at, id",
      [tenantId],
    );
  }

  /**
   * Per variant: distinct customers the experiment's recommendations went to, and how many of them
   * have an outcome of a `positive` key attributed to one of those recommendations. A customer
   * counts once per variant, however often they were recommended to or converted.
   */
  variantCounts(tenantId: string, experimentId: string, positiveOutcomes: readonly string[]): Promise<VariantCountRow[]> {
    return selectRows<VariantCountRow>(
      this.db,
      `SELECT r.experiment_variant AS variant,
         count(DISTINCT r.customer_id)::int AS samples,
         count(DISTINCT r.customer_id) FILTER (WHERE EXISTS (
           SELECT 1 FROM interactions i
           WHERE i.tenant_id = r.tenant_id AND i.recommendation_id = r.id AND i.outcome = ANY($3::text[])
         ))::int AS conversions
       FROM recommendations r
       WHERE r.tenant_id = $1 AND r.experiment_id = $2
       GROUP BY r.experiment_variant`,
      [tenantId, experimentId, positiveOutcomes],
    );
  }

  /**
   * Across tenants, for the scheduled job: active auto-promoting experiments that have not promoted
   * yet and whose promoteAfterDays have passed since their first activation at `now`.
   */
  dueForPromotionAcrossTenants(now: Date): Promise<ExperimentRow[]> {
    return selectRows<ExperimentRow>(
      this.db,
      `SELECT * FROM experiments
       WHERE auto_promote AND status = 'active' AND deleted_at IS NULL AND promoted_at IS NULL
         AND started_at IS NOT NULL AND started_at + make_interval(days => promote_after_days) <= $1
       ORDER BY tenant_id, created_at, id`,
      [now],
    );
  }
}

import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import { lockTenantWrites, tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import { DEFAULT_MODEL_FAMILY, type RegistryStatus } from "../core/index.js";

/** The registry's columns of an algorithm model (the catalog owns the rest of the row). */
export interface RegistryRow {
  id: string;
  key: string;
  name: string;
  type: string;
  family: string;
  registry_status: RegistryStatus;
  version: number;
  updated_at: Date;
}

const COLUMNS = "id, key, name, type, family, registry_status, version, updated_at";

/**
 * Registry moves on algorithm_models: the registry owns `registry_status` (the catalog's writes
 * never set it) and moves `family` with it. Tenant first, always; reads inside a move lock the
 * rows they read, after the tenant's write lock.
 */
export class ModelRegistryStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * The one lock order (tenant-write-lock.ts): the tenant's write lock, then row locks; retried on
   * deadlock. Inside `outer` (an approval applying a move) it takes the lock there and runs in it.
   */
  async transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>, outer?: Transaction): Promise<T> {
    if (!outer) return tenantWriteTransaction(this.db, tenantId, fn);
    await lockTenantWrites(this.db, outer, tenantId);
    return fn(outer);
  }

  async model(t: Transaction, tenantId: string, id: string): Promise<RegistryRow | null> {
    const [row] = await selectRows<RegistryRow>(
      this.db,
      `SELECT ${COLUMNS} FROM algorithm_models WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  /** The live champion of `family` other than `exceptId`, locked. */
  async champion(t: Transaction, tenantId: string, family: string, exceptId: string): Promise<RegistryRow | null> {
    const [row] = await selectRows<RegistryRow>(
      this.db,
      `SELECT ${COLUMNS} FROM algorithm_models
       WHERE tenant_id = $1 AND family = $2 AND registry_status = 'champion' AND deleted_at IS NULL AND id <> $3 FOR UPDATE`,
      [tenantId, family, exceptId],
      t,
    );
    return row ?? null;
  }

  /** Family of every live model key: which family a flow's score node names. */
  async familiesByKey(t: Transaction, tenantId: string): Promise<Map<string, string>> {
    const rows = await selectRows<{ key: string; family: string | null }>(
      this.db,
      "SELECT key, family FROM algorithm_models WHERE tenant_id = $1 AND deleted_at IS NULL",
      [tenantId],
      t,
    );
    // A model without a family is in the default one (core/model-lineup.ts), flows naming it included.
    return new Map(rows.map((r) => [r.key, r.family || DEFAULT_MODEL_FAMILY]));
  }

  /** Sets status and family, with a version increment as every change of the entity has. */
  async move(t: Transaction, tenantId: string, id: string, status: RegistryStatus, family: string): Promise<RegistryRow> {
    const [row] = await execReturning<RegistryRow>(
      this.db,
      `UPDATE algorithm_models SET registry_status = $3, family = $4, version = version + 1, updated_at = now()
       WHERE tenant_id = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [tenantId, id, status, family],
      t,
    );
    return row;
  }

  /** Live models in a family role (shadow, challenger, champion), by family then name; one family when given. */
  lineup(tenantId: string, family: string | null): Promise<RegistryRow[]> {
    return selectRows<RegistryRow>(
      this.db,
      `SELECT ${COLUMNS} FROM algorithm_models
       WHERE tenant_id = $1 AND deleted_at IS NULL AND registry_status IN ('shadow', 'challenger', 'champion')
         AND ($2::text IS NULL OR family = $2)
       ORDER BY family, name, id`,
      [tenantId, family],
    );
  }
}

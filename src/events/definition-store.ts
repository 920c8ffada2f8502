import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import { tenantWriteTransaction } from "../platform/tenant-write-lock.js";

/** The columns trigger rules and journeys share: named, versioned, soft-deleted configuration. */
export interface DefinitionRow {
  tenant_id: string;
  id: string;
  name: string;
  status: "active" | "inactive";
  version: number;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/**
 * Trigger rules and journeys are stored alike: one table each, tenant first, a live-name unique
 * index, JSON columns for their definitions. One store over the table name, not two copies.
 */
export class DefinitionStore<Row extends DefinitionRow> {
  constructor(
    private readonly db: Sequelize,
    private readonly table: "trigger_rules" | "journeys",
    private readonly jsonColumns: ReadonlySet<string>,
  ) {}

  /** A write: the tenant's write lock first (tenant-write-lock.ts), retried on transient conflicts. */
  transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>): Promise<T> {
    return tenantWriteTransaction(this.db, tenantId, fn);
  }

  async insert(t: Transaction, tenantId: string, values: Record<string, unknown> & { id: string }): Promise<Row> {
    const columns = ["tenant_id", ...Object.keys(values)];
    const bind = [tenantId, ...Object.entries(values).map(([c, v]) => this.bindValue(c, v))];
    const [row] = await execReturning<Row>(
      this.db,
      `INSERT INTO ${this.table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  /** Sets the given columns, updated_at and the next version. */
  async update(t: Transaction, tenantId: string, id: string, values: Record<string, unknown>): Promise<Row> {
    const bind: unknown[] = [tenantId, id];
    const sets = Object.entries(values).map(([column, value]) => {
      bind.push(this.bindValue(column, value));
      return `${column} = $${bind.length}`;
    });
    sets.push("updated_at = now()", "version = version + 1");
    const [row] = await execReturning<Row>(this.db, `UPDATE ${this.table} SET ${sets.join(", ")} WHERE tenant_id = $1 AND id = $2 RETURNING *`, bind, t);
    return row;
  }

  async softDelete(t: Transaction, tenantId: string, id: string): Promise<void> {
    await this.db.query(`UPDATE ${this.table} SET deleted_at = now(), updated_at = now() WHERE tenant_id = $1 AND id = $2`, { bind: [tenantId, id], transaction: t });
  }

  /** A live row; locked for update inside a write. */
  async find(tenantId: string, id: string, t?: Transaction): Promise<Row | null> {
    const [row] = await selectRows<Row>(
      this.db,
      `SELECT * FROM ${this.table} WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NULL${t ? " FOR UPDATE" : ""}`,
      [tenantId, id],
      t,
    );
    return row ?? null;
  }

  /** A keyset page, newest id first, one extra row telling whether more exist. */
  page(tenantId: string, page: CursorPageRequest): Promise<Row[]> {
    const bind: unknown[] = [tenantId, page.limit + 1];
    let where = "tenant_id = $1 AND deleted_at IS NULL";
    if (page.cursor) {
      bind.push(page.cursor);
      where += ` AND id < $${bind.length}`;
    }
    return selectRows<Row>(this.db, `SELECT * FROM ${this.table} WHERE ${where} ORDER BY id DESC LIMIT $2`, bind);
  }

  /** Live, active rows matching `where` over further columns (bound from $2). */
  active(tenantId: string, where = "", bind: unknown[] = []): Promise<Row[]> {
    return selectRows<Row>(
      this.db,
      `SELECT * FROM ${this.table} WHERE tenant_id = $1 AND status = 'active' AND deleted_at IS NULL${where ? ` AND ${where}` : ""} ORDER BY created_at, id`,
      [tenantId, ...bind],
    );
  }

  private bindValue(column: string, value: unknown): unknown {
    return this.jsonColumns.has(column) ? JSON.stringify(value) : value;
  }
}

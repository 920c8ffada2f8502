import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import type { ColumnValues } from "./write-fields.js";

export type CatalogTable = "offers" | "creatives" | "catalog_entries";
export type EntryKind = "category" | "sub_category" | "channel" | "placement" | "outcome_type";

/** A catalog row as stored: columns are named as the proto fields they back. */
export interface CatalogRow {
  tenant_id: string;
  id: string;
  name: string;
  version: number;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
  [column: string]: unknown;
}

/** Extra equality filters a list may apply (kind of entry, parent offer). */
export type RowFilter = Partial<Record<"kind" | "offer_id", string>>;

function filterSql(filter: RowFilter, bind: unknown[]): string {
  return Object.entries(filter)
    .map(([column, value]) => {
      bind.push(value);
      return ` AND ${column} = $${bind.length}`;
    })
    .join("");
}

/**
 * Rows of the three catalog tables. Every method takes the tenant first and filters by it; column
 * names come from the field rules in catalog-rules.ts, never from request input.
 */
export class CatalogStore {
  constructor(private readonly db: Sequelize) {}

  transaction<T>(fn: (t: Transaction) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  async insert(t: Transaction, table: CatalogTable, tenantId: string, values: ColumnValues): Promise<CatalogRow> {
    const columns = ["tenant_id", ...Object.keys(values)];
    const bind = [tenantId, ...Object.values(values)];
    const [row] = await execReturning<CatalogRow>(
      this.db,
      `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(", ")}) RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  /** Sets the given columns (and updated_at); `bumpVersion` increments version in the same statement. */
  async update(
    t: Transaction,
    table: CatalogTable,
    tenantId: string,
    id: string,
    values: ColumnValues,
    bumpVersion: boolean,
  ): Promise<CatalogRow> {
    const bind: unknown[] = [tenantId, id];
    const sets = Object.entries(values).map(([column, value]) => {
      bind.push(value);
      return `${column} = $${bind.length}`;
    });
    sets.push("updated_at = now()");
    if (bumpVersion) sets.push("version = version + 1");
    const [row] = await execReturning<CatalogRow>(
      this.db,
      `UPDATE ${table} SET ${sets.join(", ")} WHERE tenant_id = $1 AND id = $2 RETURNING *`,
      bind,
      t,
    );
    return row;
  }

  /** One row by id (or, for offers, by live name), locked for update when inside a write. */
  async find(
    table: CatalogTable,
    tenantId: string,
    idOrName: { id?: string; name?: string },
    opts: { includeDeleted?: boolean; filter?: RowFilter; t?: Transaction } = {},
  ): Promise<CatalogRow | null> {
    const bind: unknown[] = [tenantId];
    let where = "tenant_id = $1";
    if (idOrName.id) {
      bind.push(idOrName.id);
      where += ` AND id = $${bind.length}`;
    } else {
      bind.push(idOrName.name);
      where += ` AND name = $${bind.length}`;
    }
    if (!opts.includeDeleted) where += " AND deleted_at IS NULL";
    where += filterSql(opts.filter ?? {}, bind);
    const [row] = await selectRows<CatalogRow>(
      this.db,
      `SELECT * FROM ${table} WHERE ${where} ORDER BY deleted_at NULLS FIRST LIMIT 1${opts.t ? " FOR UPDATE" : ""}`,
      bind,
      opts.t,
    );
    return row ?? null;
  }

  /** A keyset page, newest first, fetching one extra row to tell whether more exist. */
  page(table: CatalogTable, tenantId: string, page: CursorPageRequest, includeDeleted: boolean, filter: RowFilter = {}): Promise<CatalogRow[]> {
    const bind: unknown[] = [tenantId, page.limit + 1];
    let where = "tenant_id = $1";
    if (page.cursor) {
      bind.push(page.cursor);
      where += ` AND id < $${bind.length}`;
    }
    if (!includeDeleted) where += " AND deleted_at IS NULL";
    where += filterSql(filter, bind);
    return selectRows<CatalogRow>(this.db, `SELECT * FROM ${table} WHERE ${where} ORDER BY id DESC LIMIT $2`, bind);
  }

  creativesOfOffers(tenantId: string, offerIds: string[], includeDeleted: boolean): Promise<CatalogRow[]> {
    if (!offerIds.length) return Promise.resolve([]);
    return selectRows<CatalogRow>(
      this.db,
      `SELECT * FROM creatives WHERE tenant_id = $1 AND offer_id = ANY($2::uuid[])${includeDeleted ? "" : " AND deleted_at IS NULL"} ORDER BY id`,
      [tenantId, offerIds],
    );
  }

  entriesByIds(tenantId: string, ids: string[]): Promise<CatalogRow[]> {
    if (!ids.length) return Promise.resolve([]);
    return selectRows<CatalogRow>(this.db, "SELECT * FROM catalog_entries WHERE tenant_id = $1 AND id = ANY($2::uuid[])", [tenantId, ids]);
  }

  /** Soft-deletes the offer's live creatives, each with a version increment (spec 3.7 cascade). */
  async cascadeDeleteCreatives(t: Transaction, tenantId: string, offerId: string): Promise<Array<{ before: CatalogRow; after: CatalogRow }>> {
    const before = await selectRows<CatalogRow>(
      this.db,
      "SELECT * FROM creatives WHERE tenant_id = $1 AND offer_id = $2 AND deleted_at IS NULL ORDER BY id FOR UPDATE",
      [tenantId, offerId],
      t,
    );
    if (!before.length) return [];
    const after = await execReturning<CatalogRow>(
      this.db,
      `UPDATE creatives SET deleted_at = now(), updated_at = now(), version = version + 1
       WHERE tenant_id = $1 AND id = ANY($2::uuid[]) RETURNING *`,
      [tenantId, before.map((r) => r.id)],
      t,
    );
    const byId = new Map(after.map((r) => [r.id, r]));
    return before.map((b) => ({ before: b, after: byId.get(b.id)! }));
  }
}

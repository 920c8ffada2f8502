import type { Sequelize } from "sequelize";
import { containsPattern, execReturning, selectRows, type Transaction } from "../platform/db.js";
import { lockTenantWrites, tenantWriteTransaction } from "../platform/tenant-write-lock.js";
import type { CursorPageRequest } from "../platform/pagination.js";
import type { ColumnValues } from "./write-fields.js";

export type CatalogTable = "offers" | "creatives" | "catalog_entries" | "budgets" | "algorithm_models" | "decision_flows";
export type EntryKind =
  | "category"
  | "sub_category"
  | "channel"
  | "placement"
  | "outcome_type"
  | "qualification_rule"
  | "decisioning_gate"
  | "contact_policy"
  | "guardrail_rule"
  | "ranking_profile"
  | "cross_offer_constraint"
  | "segment";

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
export type RowFilter = Partial<Record<"kind" | "offer_id" | "status", string>>;

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
  /** `committed` hears of every tenant whose configuration a committed transaction changed. */
  constructor(
    private readonly db: Sequelize,
    private readonly committed: (tenantId: string) => void = () => {},
  ) {}

  /**
   * Every catalog write runs here: the tenant's write lock first, then whatever row locks `fn`
   * takes (the one lock order, tenant-write-lock.ts), retried when PostgreSQL still aborts it for a
   * deadlock or serialization failure, so `fn` may run more than once.
   *
   * Given an `outer` transaction (an approval applying its payload), the write joins it: the same
   * lock is taken (re-entrant), nothing commits here, and the change is reported once `outer` commits.
   */
  async transaction<T>(tenantId: string, fn: (t: Transaction) => Promise<T>, outer?: Transaction): Promise<T> {
    if (outer) {
      await lockTenantWrites(this.db, outer, tenantId);
      const result = await fn(outer);
      outer.afterCommit(() => this.committed(tenantId));
      return result;
    }
    const result = await tenantWriteTransaction(this.db, tenantId, fn);
    this.committed(tenantId);
    return result;
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

  /** One row by id (or by live name or key), locked for update when inside a write. */
  async find(
    table: CatalogTable,
    tenantId: string,
    idOrName: { id?: string; name?: string; key?: string },
    opts: { includeDeleted?: boolean; filter?: RowFilter; t?: Transaction } = {},
  ): Promise<CatalogRow | null> {
    const bind: unknown[] = [tenantId];
    let where = "tenant_id = $1";
    if (idOrName.id) {
      bind.push(idOrName.id);
      where += ` AND id = $${bind.length}`;
    } else if (idOrName.key) {
      bind.push(idOrName.key);
      where += ` AND key = $${bind.length}`;
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
  /** Newest first after the cursor; `nameContains` matches the name anywhere, in any case. */
  page(
    table: CatalogTable,
    tenantId: string,
    page: CursorPageRequest,
    includeDeleted: boolean,
    filter: RowFilter = {},
    nameContains: string | null = null,
  ): Promise<CatalogRow[]> {
    const bind: unknown[] = [tenantId, page.limit + 1];
    let where = "tenant_id = $1";
    if (page.cursor) {
      bind.push(page.cursor);
      where += ` AND id < $${bind.length}`;
    }
    if (!includeDeleted) where += " AND deleted_at IS NULL";
    where += filterSql(filter, bind);
    if (nameContains) {
      bind.push(containsPattern(nameContains));
      where += ` AND name ILIKE $${bind.length}`;
    }
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

  /** The tenant's live, active entries of one kind, oldest first. */
  activeEntries(tenantId: string, kind: EntryKind): Promise<CatalogRow[]> {
    return selectRows<CatalogRow>(
      this.db,
      "SELECT * FROM catalog_entries WHERE tenant_id = $1 AND kind = $2 AND status = 'active' AND deleted_at IS NULL ORDER BY created_at, id",
      [tenantId, kind],
    );
  }

  /** Which of `ids` name live rows of the tenant in `table` (within `filter`, e.g. an entry kind). */
  async liveIds(table: CatalogTable, tenantId: string, ids: string[], filter: RowFilter = {}): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const bind: unknown[] = [tenantId, ids];
    const rows = await selectRows<{ id: string }>(
      this.db,
      `SELECT id FROM ${table} WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL${filterSql(filter, bind)}`,
      bind,
    );
    return new Set(rows.map((r) => r.id));
  }

  /** The ids and keys of the tenant's live decision flows: what a pipeline's decide node may name. */
  liveFlowKeys(tenantId: string): Promise<Array<{ id: string; key: string }>> {
    return selectRows<{ id: string; key: string }>(this.db, "SELECT id, key FROM decision_flows WHERE tenant_id = $1 AND deleted_at IS NULL", [tenantId]);
  }

  /** The tenant's live active offers' ids, oldest first: what an auto-assembling flow starts with. */
  async activeOfferIds(tenantId: string, t?: Transaction): Promise<string[]> {
    const rows = await selectRows<{ id: string }>(
      this.db,
      "SELECT id FROM offers WHERE tenant_id = $1 AND status = 'active' AND deleted_at IS NULL ORDER BY created_at, id",
      [tenantId],
      t,
    );
    return rows.map((r) => r.id);
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

/** One published version of a decision flow (decision_flow_versions). */
export interface FlowVersionRow {
  flow_id: string;
  version: number;
  config: Record<string, unknown>;
  offer_ids: string[];
  notes: string;
  published_by: string | null;
  published_at: Date;
}

/** What a decision snapshot is compiled from: the live configuration of one tenant. */
export interface DecisionConfigRows {
  offers: CatalogRow[];
  creatives: CatalogRow[];
  entries: CatalogRow[];
  budgets: CatalogRow[];
  models: CatalogRow[];
  /**
   * Active flows: `config` (the nodes) from the published version when there is one, else the
   * draft; `offer_ids` always live, since auto-assembly changes membership between publishes.
   */
  flows: CatalogRow[];
}

/** Decision-flow versions and the decision read model, beside the generic rows. */
export class DecisionConfigStore {
  constructor(private readonly db: Sequelize) {}

  async insertFlowVersion(t: Transaction, tenantId: string, row: Omit<FlowVersionRow, "published_at" | "version">): Promise<FlowVersionRow> {
    const [stored] = await execReturning<FlowVersionRow>(
      this.db,
      `INSERT INTO decision_flow_versions (tenant_id, flow_id, version, config, offer_ids, notes, published_by)
       SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4::uuid[], $5, $6 FROM decision_flow_versions WHERE tenant_id = $1 AND flow_id = $2
       RETURNING *`,
      [tenantId, row.flow_id, JSON.stringify(row.config), row.offer_ids, row.notes, row.published_by],
      t,
    );
    return stored;
  }

  flowVersions(tenantId: string, flowId: string): Promise<FlowVersionRow[]> {
    return selectRows<FlowVersionRow>(
      this.db,
      "SELECT * FROM decision_flow_versions WHERE tenant_id = $1 AND flow_id = $2 ORDER BY version DESC",
      [tenantId, flowId],
    );
  }

  async flowVersion(t: Transaction, tenantId: string, flowId: string, version: number): Promise<FlowVersionRow | null> {
    const [row] = await selectRows<FlowVersionRow>(
      this.db,
      "SELECT * FROM decision_flow_versions WHERE tenant_id = $1 AND flow_id = $2 AND version = $3",
      [tenantId, flowId, version],
      t,
    );
    return row ?? null;
  }

  /**
   * Auto-assembly (spec 3.1, 4.3): `add` puts an offer that became active into the tenant's active
   * auto-assembling flows; `withdraw` takes one that left `active` out of the auto-assembling flows;
   * `remove` takes a deleted one out of every flow. Returns the flows before and after, for the audit log.
   */
  async assemble(t: Transaction, tenantId: string, offerId: string, change: "add" | "withdraw" | "remove"): Promise<Array<{ before: CatalogRow; after: CatalogRow }>> {
    const add = change === "add";
    const which = {
      add: "status = 'active' AND auto_assemble AND NOT ($2::uuid = ANY(offer_ids))",
      withdraw: "auto_assemble AND $2::uuid = ANY(offer_ids)",
      remove: "$2::uuid = ANY(offer_ids)",
    }[change];
    const before = await selectRows<CatalogRow>(
      this.db,
      `SELECT * FROM decision_flows WHERE tenant_id = $1 AND deleted_at IS NULL AND ${which}
       ORDER BY id FOR UPDATE`,
      [tenantId, offerId],
      t,
    );
    if (!before.length) return [];
    const after = await execReturning<CatalogRow>(
      this.db,
      `UPDATE decision_flows SET offer_ids = ${add ? "array_append(offer_ids, $3::uuid)" : "array_remove(offer_ids, $3::uuid)"},
         version = version + 1, updated_at = now()
       WHERE tenant_id = $1 AND id = ANY($2::uuid[]) RETURNING *`,
      [tenantId, before.map((r) => r.id), offerId],
      t,
    );
    const byId = new Map(after.map((r) => [r.id, r]));
    return before.map((b) => ({ before: b, after: byId.get(b.id)! }));
  }

  async decisionConfig(tenantId: string): Promise<DecisionConfigRows> {
    const live = (table: string, extra = "") =>
      selectRows<CatalogRow>(this.db, `SELECT * FROM ${table} WHERE tenant_id = $1 AND deleted_at IS NULL${extra} ORDER BY id`, [tenantId]);
    const [offers, creatives, entries, budgets, models, flows] = await Promise.all([
      live("offers"),
      live("creatives"),
      live("catalog_entries", " AND (status IS NULL OR status = 'active')"),
      live("budgets", " AND status = 'active'"),
      live("algorithm_models", " AND registry_status <> 'archived'"),
      selectRows<CatalogRow>(
        this.db,
        `SELECT f.*, coalesce(v.config, f.config) AS config
         FROM decision_flows f
         LEFT JOIN decision_flow_versions v ON v.tenant_id = f.tenant_id AND v.flow_id = f.id AND v.version = f.published_version
         WHERE f.tenant_id = $1 AND f.deleted_at IS NULL AND f.status = 'active' ORDER BY f.id`,
        [tenantId],
      ),
    ]);
    return { offers, creatives, entries, budgets, models, flows };
  }
}

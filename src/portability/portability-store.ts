import type { Sequelize } from "sequelize";
import { selectRows, type Transaction } from "../platform/db.js";
import { isPortable, type ExportableKind, type Reference } from "./exportable-kinds.js";

export type Row = Record<string, unknown>;

/**
 * Reads and writes of exportable rows, generic over the registry: tables and filters come from
 * exportable-kinds.ts (constants), values always travel as bind parameters.
 */
export class PortabilityStore {
  private readonly columns = new Map<string, Promise<string[]>>();

  constructor(private readonly db: Sequelize) {}

  /** The kind's rows of the tenant (or of one entity), portable columns only, oldest first. */
  async rows(kind: ExportableKind, tenantId: string, entityId?: string, t?: Transaction): Promise<Row[]> {
    const filters = ["tenant_id = $1"];
    if (kind.where) filters.push(kind.where);
    if (kind.softDeleted) filters.push("deleted_at IS NULL");
    const bind: unknown[] = [tenantId];
    if (entityId !== undefined) {
      bind.push(entityId);
      filters.push(`${kind.belongsTo ?? kind.idColumn} = $2`);
    }
    const order = kind.idColumn ? "created_at, id" : "1";
    const rows = await selectRows<Row>(this.db, `SELECT * FROM ${kind.table} WHERE ${filters.join(" AND ")} ORDER BY ${order}`, bind, t);
    return rows.map((row) => Object.fromEntries(Object.entries(row).filter(([column]) => isPortable(kind, column))));
  }

  /** The table's columns an import may fill. */
  async importableColumns(kind: ExportableKind): Promise<string[]> {
    let columns = this.columns.get(kind.table);
    if (!columns) {
      columns = selectRows<{ column_name: string }>(
        this.db,
        "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
        [kind.table],
      ).then((rows) => rows.map((r) => r.column_name));
      this.columns.set(kind.table, columns);
    }
    return (await columns).filter((c) => isPortable(kind, c));
  }

  /**
   * Inserts one row; Postgres converts the JSON values to the column types
   * (jsonb_populate_record), so a wrong type is the database's data error, mapped by the caller.
   */
  async insert(t: Transaction, kind: ExportableKind, tenantId: string, row: Row): Promise<void> {
    const columns = ["tenant_id", ...Object.keys(row)].map((c) => `"${c}"`).join(", ");
    await this.db.query(`INSERT INTO ${kind.table} (${columns}) SELECT ${columns} FROM jsonb_populate_record(NULL::${kind.table}, $1::jsonb)`, {
      bind: [JSON.stringify({ ...row, tenant_id: tenantId })],
      transaction: t,
    });
  }

  /** Which of `ids` name live rows of the reference's table (and entry kind) in the tenant. */
  async existing(t: Transaction, ref: Reference, tenantId: string, ids: readonly string[]): Promise<Set<string>> {
    const bind: unknown[] = [tenantId, ids];
    let filter = "";
    if (ref.entryKind) {
      bind.push(ref.entryKind);
      filter = " AND kind = $3";
    }
    const rows = await selectRows<{ id: string }>(this.db, `SELECT id FROM ${ref.table} WHERE tenant_id = $1 AND id = ANY($2::uuid[])${ref.softDeleted === false ? "" : " AND deleted_at IS NULL"}${filter}`, bind, t);
    return new Set(rows.map((r) => r.id));
  }

  /** Every version of one entity the audit trail recorded, oldest first: a model's history. */
  async auditedVersions(tenantId: string, entityType: string, entityId: string): Promise<Row[]> {
    return selectRows<Row>(
      this.db,
      `SELECT entity_version AS version, action, after AS snapshot, "timestamp" AS "recordedAt" FROM audit_log
       WHERE tenant_id = $1 AND entity_type = $2 AND entity_id = $3 AND after IS NOT NULL ORDER BY seq`,
      [tenantId, entityType, entityId],
    );
  }
}

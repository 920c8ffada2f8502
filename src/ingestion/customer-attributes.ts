import type { Sequelize } from "sequelize";
import { columnType, columnValue, quoteIdent, type SchemaField } from "../core/index.js";
import { selectRows, type Transaction } from "../platform/db.js";
import { qualifiedTable } from "./schema-store.js";

/** A customer's attributes from the tenant's loaded customer tables; {} when none holds the customer. */
export type LoadedCustomerAttributes = (tenantId: string, customerId: string) => Promise<Record<string, unknown>>;

/** The column that names the customer: the single primary-key field, else a field named customer_id. */
export function customerKeyField(fields: readonly SchemaField[]): SchemaField | null {
  const keys = fields.filter((f) => f.isPrimaryKey);
  if (keys.length === 1) return keys[0];
  return fields.find((f) => f.name.toLowerCase() === "customer_id") ?? null;
}

/** A column as the eligibility rules see it: numbers as numbers, dates as YYYY-MM-DD, timestamps as ISO 8601. */
function readAs(f: SchemaField): string {
  const c = quoteIdent(f.name);
  switch (f.dataType) {
    case "integer":
    case "bigint":
    case "numeric":
      return `${c}::float8 AS ${c}`;
    case "date":
      return `${c}::text AS ${c}`;
    case "timestamp":
      return `to_json(${c}) #>> '{}' AS ${c}`;
    default:
      return c;
  }
}

/**
 * The read model Recommend's customer cache uses (docs/ingestion.md, "Customer schemas"): every
 * schema with entityType customer whose key column names the customer contributes its row's
 * columns, by field name, the key itself left out; schemas later by name override earlier ones.
 * Called on a cache miss only: the decisions' customer cache keeps the result until a load of a
 * customer table invalidates the tenant.
 */
export function loadedCustomerAttributes(db: Sequelize): LoadedCustomerAttributes {
  return async (tenantId, customerId) => {
    const out: Record<string, unknown> = {};
    for (const s of await customerTables(db, tenantId, customerId)) {
      const others = s.fields.filter((f) => f !== s.key && f.name !== s.key.name);
      if (!others.length) continue;
      const [row] = await selectRows<Record<string, unknown>>(db, `SELECT ${others.map(readAs).join(", ")} FROM ${s.table} WHERE ${s.where} LIMIT 1`, [s.id]);
      if (row) Object.assign(out, row);
    }
    return out;
  };
}

/** A loaded customer table that can hold a customer, with its key's WHERE and the id bound to `$1`. */
interface CustomerTable {
  table: string;
  fields: SchemaField[];
  key: SchemaField;
  where: string;
  id: string;
}

/**
 * The tenant's customer tables that can hold `customerId` (by name): each qualified table, its
 * fields and key, and the `WHERE` on the key with `$1` bound to the id as the key's column value.
 * An id the key's type cannot hold names no row of that table (and must not reach SQL as a bad cast).
 */
async function customerTables(db: Sequelize, tenantId: string, customerId: string, t?: Transaction): Promise<CustomerTable[]> {
  const schemas = await selectRows<{ table_name: string; fields: SchemaField[] }>(
    db,
    "SELECT table_name, fields FROM ingestion_schemas WHERE tenant_id = $1 AND entity_type = 'customer' ORDER BY name",
    [tenantId],
    t,
  );
  const out: CustomerTable[] = [];
  for (const s of schemas) {
    const key = customerKeyField(s.fields);
    const id = key && columnValue({ ...key, isNullable: false }, customerId);
    if (!key || !id?.ok || id.value === null) continue;
    out.push({ table: qualifiedTable(tenantId, s.table_name), fields: s.fields, key, where: `${quoteIdent(key.name)} = $1::${columnType(key)}`, id: id.value });
  }
  return out;
}

/**
 * GDPR erasure's share of ingestion (src/portability/customer-erasure.ts): the customer's rows in
 * every loaded customer table, found the way Recommend reads them (by the table's customer key).
 */
export function loadedCustomerRows(db: Sequelize) {
  /** The sum over the customer's tables of what `each` counts in one of them. */
  const overTables = async (tenantId: string, customerId: string, t: Transaction | undefined, each: (s: CustomerTable) => Promise<number>) => {
    let n = 0;
    for (const s of await customerTables(db, tenantId, customerId, t)) n += await each(s);
    return n;
  };
  return {
    kind: "loadedCustomerRows",
    erase: (tenantId: string, customerId: string, t?: Transaction): Promise<number> =>
      overTables(tenantId, customerId, t, async (s) => {
        const [, result] = await db.query(`DELETE FROM ${s.table} WHERE ${s.where}`, { bind: [s.id], transaction: t });
        return (result as { rowCount?: number }).rowCount ?? 0;
      }),
    count: (tenantId: string, customerId: string): Promise<number> =>
      overTables(tenantId, customerId, undefined, async (s) => (await selectRows<{ n: number }>(db, `SELECT count(*)::int AS n FROM ${s.table} WHERE ${s.where}`, [s.id]))[0].n),
  };
}

import type { Sequelize } from "sequelize";
import { columnType, columnValue, quoteIdent, type SchemaField } from "../core/index.js";
import { selectRows } from "../platform/db.js";
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
    const schemas = await selectRows<{ table_name: string; fields: SchemaField[] }>(
      db,
      "SELECT table_name, fields FROM ingestion_schemas WHERE tenant_id = $1 AND entity_type = 'customer' ORDER BY name",
      [tenantId],
    );
    const out: Record<string, unknown> = {};
    for (const s of schemas) {
      const key = customerKeyField(s.fields);
      if (!key) continue;
      const others = s.fields.filter((f) => f !== key && f.name !== key.name);
      // An id the key's type cannot hold names no row of this table (and must not reach SQL as a bad cast).
      const id = columnValue({ ...key, isNullable: false }, customerId);
      if (!others.length || !id.ok) continue;
      const [row] = await selectRows<Record<string, unknown>>(
        db,
        `SELECT ${others.map(readAs).join(", ")} FROM ${qualifiedTable(tenantId, s.table_name)} WHERE ${quoteIdent(key.name)} = $1::${columnType(key)} LIMIT 1`,
        [id.value],
      );
      if (row) Object.assign(out, row);
    }
    return out;
  };
}

import type { Sequelize } from "sequelize";
import { execReturning, selectRows, type Transaction } from "../platform/db.js";
import { lockTenantWrites } from "../platform/tenant-write-lock.js";
import type { AuditRow } from "./audit-entry.js";

/** Equality and range filters of the read routes; every one is optional. */
export interface AuditFilter {
  entityType?: string;
  entityId?: string;
  /** Any of these stored actions (audit-service.ts: exact, or exportActionsMatching). */
  actions?: string[];
  /** Inclusive. */
  since?: Date;
  /** Inclusive. */
  until?: Date;
}

function where(tenantId: string, filter: AuditFilter, bind: unknown[]): string {
  bind.push(tenantId);
  const parts = [`tenant_id = $${bind.length}`];
  const add = (sql: string, value: unknown) => {
    bind.push(value);
    parts.push(sql.replace("?", `$${bind.length}`));
  };
  if (filter.entityType) add("entity_type = ?", filter.entityType);
  if (filter.entityId) add("entity_id = ?", filter.entityId);
  if (filter.actions) add("action = ANY(?::text[])", filter.actions);
  if (filter.since) add(`"timestamp" >= ?`, filter.since);
  if (filter.until) add(`"timestamp" <= ?`, filter.until);
  return parts.join(" AND ");
}

/** The audit_log table: appends under the tenant's chain lock, and filtered reads. Tenant first, always. */
export class AuditStore {
  constructor(private readonly db: Sequelize) {}

  /**
   * Serializes the tenant's chain writers until the transaction ends, across every process: the
   * next writer reads the previous entry only after it has committed. This is the tenant's write
   * lock, which writers of configuration have already taken first of all (tenant-write-lock.ts).
   */
  lockChain(t: Transaction, tenantId: string): Promise<void> {
    return lockTenantWrites(this.db, t, tenantId);
  }

  async lastHash(t: Transaction, tenantId: string): Promise<string | null> {
    const [row] = await selectRows<{ integrity_hash: string }>(
      this.db,
      "SELECT integrity_hash FROM audit_log WHERE tenant_id = $1 ORDER BY seq DESC LIMIT 1",
      [tenantId],
      t,
    );
    return row?.integrity_hash ?? null;
  }

  async insert(t: Transaction, row: Omit<AuditRow, "seq">): Promise<AuditRow> {
    const [stored] = await execReturning<AuditRow>(
      this.db,
      `INSERT INTO audit_log (tenant_id, id, action, entity_type, entity_id, entity_name, before, after, entity_version,
         changes, user_id, user_name, request_id, "timestamp", integrity_hash, prev_hash)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING *`,
      [
        row.tenant_id, row.id, row.action, row.entity_type, row.entity_id, row.entity_name,
        row.before === null ? null : JSON.stringify(row.before),
        row.after === null ? null : JSON.stringify(row.after),
        row.entity_version, JSON.stringify(row.changes), row.user_id, row.user_name, row.request_id,
        row.timestamp, row.integrity_hash, row.prev_hash,
      ],
      t,
    );
    return stored;
  }

  async setHash(t: Transaction, tenantId: string, id: string, hash: string): Promise<void> {
    await this.db.query("UPDATE audit_log SET integrity_hash = $3 WHERE tenant_id = $1 AND id = $2", { bind: [tenantId, id, hash], transaction: t });
  }

  async count(tenantId: string, filter: AuditFilter): Promise<number> {
    const bind: unknown[] = [];
    const [row] = await selectRows<{ n: number }>(this.db, `SELECT count(*)::int AS n FROM audit_log WHERE ${where(tenantId, filter, bind)}`, bind);
    return row.n;
  }

  /** Newest first (the read routes) or oldest first (exports), offset pages. */
  page(tenantId: string, filter: AuditFilter, limit: number, offset: number, order: "newest" | "oldest"): Promise<AuditRow[]> {
    const bind: unknown[] = [];
    const sql = `SELECT * FROM audit_log WHERE ${where(tenantId, filter, bind)} ORDER BY seq ${order === "newest" ? "DESC" : "ASC"}
                 LIMIT $${bind.length + 1} OFFSET $${bind.length + 2}`;
    return selectRows<AuditRow>(this.db, sql, [...bind, limit, offset]);
  }

  async byId(tenantId: string, id: string): Promise<AuditRow | null> {
    const [row] = await selectRows<AuditRow>(this.db, "SELECT * FROM audit_log WHERE tenant_id = $1 AND id = $2", [tenantId, id]);
    return row ?? null;
  }

  /** The entry `skip` places before the newest (0 = the newest), or null past the chain's start. */
  async nthNewest(tenantId: string, skip: number): Promise<AuditRow | null> {
    const [row] = await selectRows<AuditRow>(this.db, "SELECT * FROM audit_log WHERE tenant_id = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1", [tenantId, skip]);
    return row ?? null;
  }

  /** The last entry written before `time`: the anchor whose hash the first entry of a range must link to. */
  async lastBefore(tenantId: string, time: Date): Promise<AuditRow | null> {
    const [row] = await selectRows<AuditRow>(
      this.db,
      `SELECT * FROM audit_log WHERE tenant_id = $1 AND "timestamp" < $2 ORDER BY seq DESC LIMIT 1`,
      [tenantId, time],
    );
    return row ?? null;
  }

  /** Chain order, in batches: entries after `afterSeq` (all when null), up to `until` when given. */
  chainBatch(tenantId: string, afterSeq: string | null, until: Date | undefined, size: number): Promise<AuditRow[]> {
    return selectRows<AuditRow>(
      this.db,
      `SELECT * FROM audit_log WHERE tenant_id = $1 AND seq > $2 AND ($3::timestamptz IS NULL OR "timestamp" <= $3)
       ORDER BY seq LIMIT $4`,
      [tenantId, afterSeq ?? "-1", until ?? null, size],
    );
  }
}

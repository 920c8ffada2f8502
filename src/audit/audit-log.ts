import type { TenantContext } from "../platform/context.js";
import type { Transaction } from "../platform/db.js";
import { newId } from "../platform/ids.js";
import { integrityHash, type AuditAction, type AuditRow } from "./audit-entry.js";
import type { AuditStore } from "./audit-store.js";

/**
 * What a service records about one change. Snapshots are for configuration entities only (spec 2.6):
 * never put customer data into `before`, `after` or `changes`, because the hash chain makes entries
 * unerasable.
 */
export interface AuditRecord {
  action: AuditAction;
  entityType: string;
  entityId: string;
  entityName: string | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  entityVersion: number | null;
  changes?: Record<string, unknown>;
}

/**
 * The one audit mechanism every configuration write uses, inside the writer's own transaction, so
 * an entry exists exactly when its change commits.
 */
export class AuditLog {
  constructor(private readonly store: AuditStore) {}

  async record(t: Transaction, ctx: TenantContext, record: AuditRecord): Promise<void> {
    await this.store.lockChain(t, ctx.tenantId);
    const row: Omit<AuditRow, "seq"> = {
      tenant_id: ctx.tenantId,
      id: newId(),
      action: record.action,
      entity_type: record.entityType,
      entity_id: record.entityId,
      entity_name: record.entityName,
      before: record.before,
      after: record.after,
      entity_version: record.entityVersion,
      changes: record.changes ?? {},
      user_id: ctx.userId,
      user_name: ctx.actorName,
      request_id: ctx.requestId || null,
      // Taken under the lock, so a tenant's timestamps follow its chain order within one clock.
      timestamp: new Date(),
      integrity_hash: "",
      prev_hash: await this.store.lastHash(t, ctx.tenantId),
    };
    row.integrity_hash = integrityHash(row);
    const stored = await this.store.insert(t, row);
    // Verification hashes what the database gives back; should jsonb have normalized a value
    // differently from the JavaScript original, the stored hash follows the stored values.
    const hash = integrityHash(stored);
    if (hash !== stored.integrity_hash) await this.store.setHash(t, ctx.tenantId, stored.id, hash);
  }
}

import type { Sequelize } from "sequelize";
import { retryingTransaction, type RetryOptions, type Transaction } from "./db.js";

/** Arbitrary constant, the first half of the lock (the second is the tenant's hash). */
const TENANT_WRITE_LOCK_CLASS = 727_003;

/**
 * The tenant's write lock, held until the transaction ends, across every process. The audit log
 * takes it to keep the tenant's hash chain linear (audit-store.ts), so every configuration write
 * holds it by the time it commits.
 *
 * The lock order of the service (../shared/STYLE.md): a transaction that writes a tenant's
 * configuration takes this lock first, before any row lock. Taken later, it deadlocks: an offer
 * write held it and waited for a flow row that a flow publish held while waiting for it.
 * Re-entrant: taking it again in the same transaction is a no-op.
 */
export async function lockTenantWrites(db: Sequelize, t: Transaction, tenantId: string): Promise<void> {
  await db.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", { bind: [TENANT_WRITE_LOCK_CLASS, tenantId], transaction: t });
}

/** A retrying transaction (db.ts) whose first statement takes the tenant's write lock. */
export function tenantWriteTransaction<T>(db: Sequelize, tenantId: string, fn: (t: Transaction) => Promise<T>, options?: RetryOptions): Promise<T> {
  return retryingTransaction(
    db,
    async (t) => {
      await lockTenantWrites(db, t, tenantId);
      return fn(t);
    },
    options,
  );
}

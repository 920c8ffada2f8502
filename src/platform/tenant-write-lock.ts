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

/**
 * A retrying transaction (db.ts) whose first statement takes the tenant's write lock.
 *
 * Within a process, a tenant's writes also wait their turn in memory before they take a pooled
 * connection. Waiting on the lock in PostgreSQL holds a connection: a burst of one tenant's writes
 * filled the pool with waiters while the holder needed a second connection for a read outside its
 * transaction, and every write stalled until the pool's acquire timeout (500s, and other tenants
 * could not even authenticate). Queued here, at most one connection per tenant and process waits
 * on the lock; other processes still wait in PostgreSQL, behind at most one writer each.
 */
export function tenantWriteTransaction<T>(db: Sequelize, tenantId: string, fn: (t: Transaction) => Promise<T>, options?: RetryOptions): Promise<T> {
  return inTurn(tenantId, () =>
    writeSlots(db).run(() =>
      retryingTransaction(
        db,
        async (t) => {
          await lockTenantWrites(db, t, tenantId);
          return fn(t);
        },
        options,
      ),
    ),
  );
}

/** The last write queued per tenant; it settles when that write is done. Empty when none waits. */
const queues = new Map<string, Promise<void>>();

async function inTurn<T>(tenantId: string, run: () => Promise<T>): Promise<T> {
  const before = queues.get(tenantId);
  let done!: () => void;
  const mine = new Promise<void>((resolve) => (done = resolve));
  queues.set(tenantId, mine);
  if (before) await before;
  try {
    return await run();
  } finally {
    done();
    if (queues.get(tenantId) === mine) queues.delete(tenantId);
  }
}

/**
 * At most half the pool in write transactions at once, across tenants: a writer may need a second
 * connection for a read outside its transaction, and with every connection held by a writer none
 * would get one (the same stall as above, with many tenants writing at once instead of one).
 */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];

  constructor(size: number) {
    this.free = size;
  }

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

const slotsByPool = new WeakMap<Sequelize, Slots>();

function writeSlots(db: Sequelize): Slots {
  let slots = slotsByPool.get(db);
  if (!slots) slotsByPool.set(db, (slots = new Slots(Math.max(1, Math.floor((db.config.pool?.max ?? 10) / 2)))));
  return slots;
}

import type { Sequelize } from "sequelize";
import { selectRows } from "../platform/db.js";

/** One store's saved state for one tenant: a row of `counter_snapshots`. */
export interface SavedCounterState {
  tenantId: string;
  store: string;
  state: unknown;
}

/**
 * `counter_snapshots` (migration 0031): what the in-memory counters of the single-node default
 * saved, one row per tenant and store. Only counter-persistence.ts reads and writes it.
 */
export class CounterSnapshotStore {
  constructor(private readonly db: Sequelize) {}

  /** Every tenant's saved states: the start-up load, before the service answers. */
  async loadAcrossTenants(): Promise<SavedCounterState[]> {
    const rows = await selectRows<{ tenant_id: string; store: string; state: unknown }>(this.db, "SELECT tenant_id, store, state FROM counter_snapshots", []);
    return rows.map((r) => ({ tenantId: r.tenant_id, store: r.store, state: r.state }));
  }

  /**
   * Makes the tenant's rows exactly `states` (store name to state) in one transaction: a store
   * absent from `states` holds nothing of the tenant, so its row goes (a wipe is saved as much as a
   * count). A tenant deleted meanwhile gets no rows (its key would refuse them).
   */
  async replace(tenantId: string, states: ReadonlyMap<string, unknown>): Promise<void> {
    await this.db.transaction(async (transaction) => {
      await this.db.query("DELETE FROM counter_snapshots WHERE tenant_id = $1", { bind: [tenantId], transaction });
      if (!states.size) return;
      await this.db.query(
        `INSERT INTO counter_snapshots (tenant_id, store, state)
         SELECT t.id, s.key, s.value FROM tenants t, json_each($2::json) s WHERE t.id = $1`,
        { bind: [tenantId, JSON.stringify(Object.fromEntries(states))], transaction },
      );
    });
  }
}

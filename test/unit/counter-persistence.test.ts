import { test } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { createPersistentMemoryCounters } from "../../src/decisions/counter-persistence.js";
import type { SavedCounterState } from "../../src/decisions/counter-snapshot-store.js";
import { createLogger } from "../../src/platform/logger.js";

/** counter_snapshots in memory: rows by tenant, then store; `failing` tenants refuse their write. */
function fakeSnapshotStore(initial: SavedCounterState[] = []) {
  const rows = new Map<string, Map<string, unknown>>();
  for (const r of initial) rows.set(r.tenantId, new Map([...(rows.get(r.tenantId) ?? []), [r.store, r.state]]));
  const writes: string[] = [];
  const failing = new Set<string>();
  return {
    rows,
    writes,
    failing,
    async loadAcrossTenants() {
      return [...rows].flatMap(([tenantId, byStore]) => [...byStore].map(([store, state]) => ({ tenantId, store, state })));
    },
    async replace(tenantId: string, states: ReadonlyMap<string, unknown>) {
      if (failing.has(tenantId)) throw new Error("database down");
      writes.push(tenantId);
      rows.set(tenantId, new Map(JSON.parse(JSON.stringify([...states]))));
    },
  };
}

const logger = createLogger("silent");
const budget = (key: string) => [[{ key, limit: 1, increment: 1 }]];

test("saves only after start, only the tenants that changed, and loads what it saved into a new process", async () => {
  const store = fakeSnapshotStore();
  const first = createPersistentMemoryCounters({ store, logger, intervalMs: 60_000 });
  await first.counters.reservations.reserve("t1", budget("budget:b1"));
  await first.persistence.save();
  assert.deepEqual(store.writes, [], "before start (the CLI never starts it) nothing is written");

  await first.persistence.start();
  await first.persistence.save();
  assert.deepEqual(store.writes, ["t1"], "what changed before the start is saved with the first save");
  await first.counters.decisionCounter.countDecision("t2", null, ["o1|all"]);
  await first.counters.assignments.keep("t2", "e1", "c1", "b", ["a", "b"]);
  await first.persistence.save();
  await first.persistence.save();
  assert.deepEqual(store.writes, ["t1", "t2"], "one write per changed tenant; nothing changed, nothing written");
  assert.deepEqual([...store.rows.get("t2")!.keys()].sort(), ["assignments", "decisions", "evidence"]);

  await first.counters.reservations.reserve("t1", budget("budget:b2"));
  await first.persistence.stop();
  assert.deepEqual(store.writes, ["t1", "t2", "t1"], "the stop saves what changed since");

  const second = createPersistentMemoryCounters({ store, logger });
  await second.persistence.start();
  assert.deepEqual(await second.counters.reservations.reserve("t1", [...budget("budget:b1"), ...budget("budget:b2")]), [false, false]);
  assert.equal(await second.counters.decisionCounter.decisions("t2"), 1);
  assert.deepEqual(await second.counters.evidence.readEvidence("t2", ["o1|all"]), [{ successes: 0, trials: 1 }]);
  assert.equal(await second.counters.assignments.peek("t2", "e1", "c1"), "b");
  await second.persistence.stop();
});

test("a workspace reset and a customer's erasure are saved before they return", async () => {
  const store = fakeSnapshotStore();
  const { counters, persistence } = createPersistentMemoryCounters({ store, logger, intervalMs: 60_000 });
  await persistence.start();
  await counters.reservations.increment("t1", [{ key: "fc:c1:offer:o1", by: 1 }, { key: "budget:b1", by: 1 }]);
  await counters.negatives.record("t1", "c1", { offerId: "o1", outcome: "dismissed", at: "2024-01-01T00:00:00Z" });
  await counters.decisionCounter.countDecision("t2", null, []);
  await persistence.save();

  await counters.reservations.increment("t2", [{ key: "budget:b1", by: 1 }]);
  await counters.customerWipe.forgetCustomer("t1", "c1");
  assert.deepEqual([...store.rows.get("t1")!.keys()], ["reservations"], "the customer's negatives are gone from the saved state");
  assert.deepEqual(store.rows.get("t1")!.get("reservations"), { counters: [["budget:b1", 1, null]] });

  await counters.wipe.resetTenant("t1");
  assert.equal(store.rows.get("t1")!.size, 0, "the reset tenant's saved state is gone");
  assert.deepEqual(store.rows.get("t2")!.get("reservations"), { counters: [["budget:b1", 1, null]] }, "other changes go with it");

  const restarted = createPersistentMemoryCounters({ store, logger });
  await restarted.persistence.start();
  assert.deepEqual(await restarted.counters.reservations.read("t1", ["budget:b1"]), { "budget:b1": 0 });
  assert.equal(await restarted.counters.decisionCounter.decisions("t2"), 1);
  await restarted.persistence.stop();
  await persistence.stop();
});

test("a failed write is retried by the next save; a row no store can read is skipped at load", async () => {
  const store = fakeSnapshotStore([
    { tenantId: "t9", store: "evidence", state: { evidence: "not a list" } },
    { tenantId: "t9", store: "no-such-store", state: {} },
    { tenantId: "t9", store: "decisions", state: { decisions: 4 } },
  ]);
  const { counters, persistence } = createPersistentMemoryCounters({ store, logger, intervalMs: 20 });
  await persistence.start();
  assert.equal(await counters.decisionCounter.decisions("t9"), 4, "the readable rows load");
  assert.deepEqual(await counters.evidence.readEvidence("t9", ["n"]), [null], "nothing of the unreadable row was loaded");

  store.failing.add("t1");
  await counters.decisionCounter.countDecision("t1", null, []);
  await assert.rejects(persistence.save(), /database down/);
  store.failing.delete("t1");
  // The periodic save (every 20 ms here) writes it without being asked.
  for (let i = 0; i < 50 && !store.writes.includes("t1"); i++) await sleep(10);
  assert.deepEqual(store.rows.get("t1")?.get("decisions"), { decisions: 1 });
  await persistence.stop();
});

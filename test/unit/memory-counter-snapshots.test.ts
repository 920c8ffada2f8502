import { test } from "node:test";
import assert from "node:assert/strict";
import { frequencyCounterKey } from "../../src/core/counters.js";
import { createMemoryReservationStore } from "../../src/decisions/reservation-store.js";
import { createMemoryEvidenceStore } from "../../src/decisions/evidence-store.js";
import { createMemoryBucketRegistry } from "../../src/decisions/bucket-registry.js";
import { createMemoryNegativeOutcomeStore, NEGATIVE_OUTCOME_TTL_SECONDS } from "../../src/decisions/negative-outcome-store.js";
import { createMemoryDecisionCounter } from "../../src/decisions/decision-counter.js";
import { ASSIGNMENT_TTL_SECONDS, createMemoryVariantAssignments } from "../../src/experiments/variant-assignments.js";
import type { SnapshotSource } from "../../src/decisions/counter-snapshot.js";

/**
 * Each in-memory store's saved state, as counter-persistence.ts writes it: through JSON (the
 * `counter_snapshots.state` column) and into a fresh store, as after a restart.
 */
function restored<S extends SnapshotSource>(from: SnapshotSource, into: S, tenantIds: string[]): S {
  const dumped = from.dump(new Set(tenantIds));
  for (const [tenantId, state] of dumped) into.load(tenantId, JSON.parse(JSON.stringify(state)));
  return into;
}

const DAY = 86_400_000;

test("reservations round-trip with their expiry: a window keeps its end, an expired counter is dropped on load", async () => {
  let clock = 1_000_000;
  const now = () => clock;
  const changed: string[] = [];
  const store = createMemoryReservationStore(now, (t) => changed.push(t));
  const daily = frequencyCounterKey("c1", "offer", "o1", 86_400, clock);
  assert.deepEqual(await store.reserve("t1", [[{ key: "budget:b1", limit: 1, increment: 1 }], [{ key: daily, limit: 3, increment: 1, ttlSeconds: 86_400 }]]), [true, true]);
  await store.increment("t1", [{ key: "short", by: 2, ttlSeconds: 10 }]);
  await store.increment("t2", [{ key: "budget:b1", by: 5 }]);
  assert.deepEqual([...new Set(changed)], ["t1", "t2"]);
  const savedAtOnce = JSON.parse(JSON.stringify(store.dump(new Set(["t1"])).get("t1")));

  clock += 5_000;
  const later = restored(store, createMemoryReservationStore(now), ["t1"]);
  assert.deepEqual(await later.read("t1", ["budget:b1", daily, "short"]), { "budget:b1": 1, [daily]: 1, short: 2 });
  assert.deepEqual(await later.reserve("t1", [[{ key: "budget:b1", limit: 1, increment: 1 }]]), [false], "the spent budget stays spent");
  assert.deepEqual(await later.read("t2", ["budget:b1"]), { "budget:b1": 0 }, "only the tenants asked for");

  clock += 5_000; // the 10-second counter has expired
  const afterExpiry = restored(store, createMemoryReservationStore(now), ["t1"]);
  assert.deepEqual(await afterExpiry.read("t1", ["short", daily]), { short: 0, [daily]: 1 });
  clock += DAY;
  assert.deepEqual(await afterExpiry.read("t1", [daily]), { [daily]: 0 }, "the loaded window ends when the saved one did");

  // A save taken while everything was live, loaded a day later: the expired entries are dropped on
  // load, not only hidden when read, so they are not carried into the next save either.
  const loadedLate = createMemoryReservationStore(now);
  loadedLate.load("t1", savedAtOnce);
  assert.deepEqual(loadedLate.dump(new Set(["t1"])).get("t1"), { counters: [["budget:b1", 1, null]] });
});

test("evidence round-trips with its exposure markers, an expired marker dropped on load", async () => {
  let clock = 1_000_000;
  const now = () => clock;
  const store = createMemoryEvidenceStore(now);
  store.addTrials("t1", ["o1|all", "o2|all"], 3);
  assert.equal(await store.addSuccess("t1", "o1|all", { id: "rec:1:1", rememberSeconds: 60 }), true);
  assert.equal(await store.addSuccess("t1", "o2|all", { id: "rec:2:1", rememberSeconds: 3600 }), true);
  store.addTrials("t2", ["o1|all"], 1);

  clock += 120_000; // the first marker (60 s) has expired, the second has not
  const later = restored(store, createMemoryEvidenceStore(now), ["t1", "t2"]);
  assert.deepEqual(await later.readEvidence("t1", ["o1|all", "o2|all", "o3|all"]), [{ successes: 1, trials: 3 }, { successes: 1, trials: 3 }, null]);
  assert.deepEqual(await later.readEvidence("t2", ["o1|all"]), [{ successes: 0, trials: 1 }]);
  assert.deepEqual([...(await later.countedExposures("t1", ["rec:1:1", "rec:2:1"]))], ["rec:2:1"]);
  assert.equal(await later.addSuccess("t1", "o2|all", { id: "rec:2:1", rememberSeconds: 3600 }), false, "the kept marker still counts its exposure once");
  assert.equal(await later.addSuccess("t1", "o1|all", { id: "rec:1:1", rememberSeconds: 60 }), true, "the expired marker was dropped");
  assert.deepEqual(later.dump(new Set(["t1"])).get("t1"), {
    evidence: [
      ["o1|all", 2, 3],
      ["o2|all", 1, 3],
    ],
    markers: [
      ["ax:rec:2:1", 1_000_000 + 3_600_000],
      ["ax:rec:1:1", 1_000_000 + 120_000 + 60_000],
    ],
  });
});

test("admitted buckets round-trip and keep counting against the cap", async () => {
  const store = createMemoryBucketRegistry(2);
  assert.deepEqual(await store.admit("t1", [{ space: "country", bucket: "de" }, { space: "country", bucket: "fr" }]), [true, true]);
  const later = restored(store, createMemoryBucketRegistry(2), ["t1"]);
  assert.deepEqual(await later.admit("t1", [{ space: "country", bucket: "it" }, { space: "country", bucket: "de" }]), [false, true], "the cap is full after the restart too");
  assert.deepEqual(await later.admit("t2", [{ space: "country", bucket: "it" }]), [true]);
});

test("negative outcomes round-trip and expire 90 days after the customer's latest, on load as in memory", async () => {
  let clock = 1_000_000;
  const now = () => clock;
  const store = createMemoryNegativeOutcomeStore(now);
  const first = { offerId: "o1", outcome: "dismissed", at: "2024-01-01T00:00:00Z" };
  await store.record("t1", "c1", first);
  clock += 30 * DAY;
  const second = { offerId: "o2", outcome: "dismissed", at: "2024-01-31T00:00:00Z" };
  await store.record("t1", "c2", second);

  clock += 61 * DAY; // c1's outcomes (91 days old) have expired, c2's (61 days) have not
  assert.deepEqual(await store.forCustomer("t1", "c1"), [], "expired in memory");
  const later = restored(store, createMemoryNegativeOutcomeStore(now), ["t1"]);
  assert.deepEqual(await later.forCustomer("t1", "c2"), [second]);
  assert.deepEqual(await later.forCustomer("t1", "c1"), []);
  clock += NEGATIVE_OUTCOME_TTL_SECONDS * 1000 - 61 * DAY;
  assert.deepEqual(await later.forCustomer("t1", "c2"), [], "the loaded outcomes expire when the saved ones did");
});

test("the decision count round-trips, its trials with the evidence", async () => {
  const evidence = createMemoryEvidenceStore();
  const counter = createMemoryDecisionCounter(evidence);
  await counter.countDecision("t1", 2, ["o1|all"]);
  await counter.countDecision("t1", 2, ["o1|all"]);
  const laterEvidence = restored(evidence, createMemoryEvidenceStore(), ["t1"]);
  const later = restored(counter, createMemoryDecisionCounter(laterEvidence), ["t1", "t2"]);
  assert.equal(await later.decisions("t1"), 2);
  assert.equal(await later.decisions("t2"), 0);
  assert.equal(await later.countDecision("t1", 2, ["o1|all"]), null, "the quota is spent after the restart too");
  assert.deepEqual(await laterEvidence.readEvidence("t1", ["o1|all"]), [{ successes: 0, trials: 2 }]);
});

test("variant assignments round-trip within their 30 days, and are dropped on load after them", async () => {
  let clock = 1_000_000;
  const now = () => clock;
  const store = createMemoryVariantAssignments(now);
  await store.keep("t1", "e1", "c1", "b", ["a", "b"]);
  clock += 10 * DAY;
  await store.keep("t1", "e1", "c2", "a", ["a", "b"]);
  clock += 25 * DAY; // c1's assignment (35 days) has expired, c2's (25 days) has not
  const later = restored(store, createMemoryVariantAssignments(now), ["t1"]);
  assert.equal(await later.peek("t1", "e1", "c2"), "a");
  assert.equal(await later.keep("t1", "e1", "c2", "b", ["a", "b"]), "a", "the customer keeps the variant although the split now says b");
  assert.equal(await later.count("t1", "c1", ["e1"]), 0, "the expired assignment was not loaded");
  clock += ASSIGNMENT_TTL_SECONDS * 1000 - 25 * DAY;
  assert.equal(await later.peek("t1", "e1", "c2"), null, "the loaded assignment expires when the saved one did");
});

test("a wiped tenant or customer dumps nothing of what was wiped, and the wipe marks the tenant changed", async () => {
  const changed = new Set<string>();
  const reservations = createMemoryReservationStore(Date.now, (t) => changed.add(t));
  const negatives = createMemoryNegativeOutcomeStore(Date.now, (t) => changed.add(t));
  await reservations.increment("t1", [{ key: frequencyCounterKey("c1", "offer", "o1", 0, 0), by: 1 }, { key: "budget:b1", by: 1 }]);
  await negatives.record("t1", "c1", { offerId: "o1", outcome: "dismissed", at: "2024-01-01T00:00:00Z" });
  changed.clear();
  await reservations.forgetCustomer("t1", "c1");
  await negatives.forgetCustomer("t1", "c1");
  assert.deepEqual([...changed], ["t1"]);
  assert.deepEqual(reservations.dump(new Set(["t1"])).get("t1"), { counters: [["budget:b1", 1, null]] });
  assert.equal(negatives.dump(new Set(["t1"])).has("t1"), false);
  changed.clear();
  await reservations.resetTenant("t1");
  assert.deepEqual([...changed], ["t1"]);
  assert.equal(reservations.dump(new Set(["t1"])).has("t1"), false);
});

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { Sequelize } from "sequelize";
import { createSequelize } from "../../src/platform/db.js";
import { ScheduledRunStore } from "../../src/scheduling/scheduled-run-store.js";
import { runRetentionJob } from "../../src/scheduling/run-retention.js";
import { createLogger } from "../../src/platform/logger.js";
import { createTestDatabase } from "../support/database.js";

/** The claim that makes a slot run once, on a real PostgreSQL. */
let db: Sequelize;
let store: ScheduledRunStore;
before(async () => {
  db = createSequelize(await createTestDatabase(), { poolMax: 4 });
  store = new ScheduledRunStore(db);
});
after(() => db.close());

const slot = new Date("2026-01-01T00:00:00Z");

test("many claims of one slot at once: exactly one wins", async () => {
  const claims = await Promise.all(Array.from({ length: 8 }, () => store.claimAcrossTenants("race", slot, 3, 30_000)));
  assert.equal(claims.filter((c) => c.claimed).length, 1);
  for (const c of claims) if (!c.claimed) assert.equal(c.current.status, "running");
});

test("a failed slot is claimed again while attempts are left; a succeeded one never", async () => {
  assert.deepEqual(await store.claimAcrossTenants("retry", slot, 2, 30_000), { claimed: true, attempt: 1 });
  await store.finishAcrossTenants("retry", slot, 1, "failed", "boom");
  assert.deepEqual(await store.claimAcrossTenants("retry", slot, 2, 30_000), { claimed: true, attempt: 2 });
  await store.finishAcrossTenants("retry", slot, 2, "failed", "boom again");
  const exhausted = await store.claimAcrossTenants("retry", slot, 2, 30_000);
  assert.equal(exhausted.claimed, false);
  assert.equal(!exhausted.claimed && exhausted.current.error, "boom again");

  await store.claimAcrossTenants("done", slot, 5, 30_000);
  await store.finishAcrossTenants("done", slot, 1, "succeeded", null);
  const done = await store.claimAcrossTenants("done", slot, 5, 30_000);
  assert.equal(!done.claimed && done.current.status, "succeeded");
});

test("a running slot whose lease ran out (its runner died) is taken over; the dead runner's late record is ignored", async () => {
  assert.deepEqual(await store.claimAcrossTenants("crash", slot, 3, 100), { claimed: true, attempt: 1 });
  assert.equal((await store.claimAcrossTenants("crash", slot, 3, 100)).claimed, false, "not while the lease holds");
  await sleep(150);
  assert.deepEqual(await store.claimAcrossTenants("crash", slot, 3, 30_000), { claimed: true, attempt: 2 });
  assert.equal(await store.renewLeaseAcrossTenants("crash", slot, 1, 30_000), false, "the first runner learns it lost the slot");
  await store.finishAcrossTenants("crash", slot, 1, "failed", "late");
  await store.finishAcrossTenants("crash", slot, 2, "succeeded", null);
  const [[row]] = (await db.query(`SELECT status, attempts, error FROM scheduled_runs WHERE job_name = 'crash'`)) as [Array<Record<string, unknown>>, unknown];
  assert.deepEqual(row, { status: "succeeded", attempts: 2, error: null });
});

test("the retention job forgets finished slots older than 30 days, and keeps recent ones and live runs", async () => {
  const day = 86_400_000;
  const now = new Date("2026-06-01T03:17:00Z");
  const old = new Date(now.getTime() - 31 * day);
  const recent = new Date(now.getTime() - 29 * day);
  for (const [job, at] of [["old-done", old], ["recent-done", recent]] as const) {
    await store.claimAcrossTenants(job, at, 3, 30_000);
    await store.finishAcrossTenants(job, at, 1, "succeeded", null);
  }
  await store.claimAcrossTenants("old-running", old, 3, 30_000);
  await runRetentionJob(store, createLogger("silent")).run(now);
  const [rows] = (await db.query(`SELECT job_name FROM scheduled_runs WHERE job_name IN ('old-done', 'recent-done', 'old-running') ORDER BY 1`)) as [Array<{ job_name: string }>, unknown];
  assert.deepEqual(rows.map((r) => r.job_name), ["old-running", "recent-done"]);
});

test("an interrupted slot is claimed again only while it still is one, by one of many claimers; a refused attempt is given back", async () => {
  const STOPPED = "stopped";
  const at = (minutes: number) => new Date(slot.getTime() + minutes * 60_000);
  const interrupt = async (job: string, when: Date) => {
    const claim = await store.claimAcrossTenants(job, when, 1, 30_000);
    assert.ok(claim.claimed);
    await store.finishAcrossTenants(job, when, claim.attempt, "failed", STOPPED);
  };
  await interrupt("int:a", at(1));
  const claims = await Promise.all(Array.from({ length: 8 }, () => store.claimInterruptedAcrossTenants("int:a", at(1), 3, 30_000, STOPPED)));
  assert.deepEqual(claims.filter((c) => c !== null), [2], "one claimer, the second attempt");
  await store.finishAcrossTenants("int:a", at(1), 2, "failed", "the file was bad");
  assert.equal(await store.claimInterruptedAcrossTenants("int:a", at(1), 3, 30_000, STOPPED), null, "failed for another reason since");

  await interrupt("int:b", at(1));
  await store.claimAcrossTenants("int:b", at(2), 1, 30_000);
  assert.equal(await store.claimInterruptedAcrossTenants("int:b", at(1), 3, 30_000, STOPPED), null, "a newer slot was claimed since");

  await interrupt("int:c", at(1));
  assert.equal(await store.claimInterruptedAcrossTenants("int:c", at(1), 3, 30_000, STOPPED), 2);
  await store.releaseAcrossTenants("int:c", at(1), 2, STOPPED);
  assert.equal(await store.claimInterruptedAcrossTenants("int:c", at(1), 3, 30_000, STOPPED), 2, "the refused attempt was given back");
  await store.finishAcrossTenants("int:c", at(1), 2, "failed", STOPPED);
  assert.equal(await store.claimInterruptedAcrossTenants("int:c", at(1), 3, 30_000, STOPPED), 3);
  await store.finishAcrossTenants("int:c", at(1), 3, "failed", STOPPED);
  assert.equal(await store.claimInterruptedAcrossTenants("int:c", at(1), 3, 30_000, STOPPED), null, "out of attempts");
  // Listed (a, failed otherwise, and b, superseded, are not); the claim is what counts the attempts.
  assert.deepEqual((await store.interruptedAcrossTenants("int:", at(-60), at(60), STOPPED)).map((r) => r.job_name), ["int:c"]);
});

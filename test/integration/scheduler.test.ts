import { test, after, describe } from "node:test";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import type { Sequelize } from "sequelize";
import { createLogger, type Logger } from "../../src/platform/logger.js";
import type { ServiceOptions } from "../../src/main.js";
import type { Config } from "../../src/config.js";
import { createSequelize } from "../../src/platform/db.js";
import { startTestService, type TestService } from "../support/service.js";
import { createTestDatabase } from "../support/database.js";
import { createSlotTable, slotRecorderJob, slotRows, type SlotRecorderSpec } from "../support/slot-recorder.js";
import { rest } from "../support/clients.js";

const started: TestService[] = [];
after(() => Promise.all(started.map((s) => s.stop())));

function capturingLogger(): { logger: Logger; entries: () => Array<Record<string, any>> } {
  const written: string[] = [];
  const logger = createLogger("debug", { write: (line: string) => void written.push(line) });
  return { logger, entries: () => written.map((l) => JSON.parse(l)) };
}

/**
 * A service whose extra jobs record into test_slot_runs. `specs` is called as the service builds
 * its jobs, just before the scheduler starts, so schedules can be relative to that moment.
 */
async function serviceWith(specs: () => SlotRecorderSpec[], config: Partial<Config>, options: ServiceOptions = {}, logger?: Logger) {
  const databaseUrl = await createTestDatabase();
  const setup = createSequelize(databaseUrl, { poolMax: 1 });
  await createSlotTable(setup);
  await setup.close();
  const svc = await startTestService(config, databaseUrl, logger, {
    ...options,
    extraJobs: (f) => specs().map((spec) => slotRecorderJob(f.db, spec)),
  });
  started.push(svc);
  return { svc, db: svc.running.foundation.db };
}

/** The scheduled_runs row of the job's first slot. */
async function firstRun(db: Sequelize, job: string): Promise<{ status: string; attempts: number; error: string | null } | undefined> {
  const [rows] = await db.query(`SELECT status, attempts, error FROM scheduled_runs WHERE job_name = $1 ORDER BY slot LIMIT 1`, { bind: [job] });
  return (rows as never[])[0];
}

/** Rows of the first slot of `job` only: later slots run their own attempts. */
async function firstSlotRows(db: Sequelize, job: string) {
  const rows = await slotRows(db, job);
  return rows.filter((r) => r.slot.getTime() === rows[0]?.slot.getTime());
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

for (const driver of ["bullmq", "local"] as const) {
  describe(`retries on the ${driver} driver`, () => {
    test("a failing job is retried with exponential backoff, each failure logged, and stops after the last attempt", async () => {
      const { logger, entries } = capturingLogger();
      const schedule = { everyMs: 4_000 };
      const { svc, db } = await serviceWith(
        () => [
          { name: "flaky", schedule, failFirst: 2 },
          { name: "broken", schedule, failFirst: 99 },
        ],
        driver === "local" ? { redisUrl: null, schedulerEnabled: true } : { schedulerEnabled: true },
        { scheduler: { retry: { attempts: 3, baseDelayMs: 200, maxDelayMs: 10_000 } } },
        logger,
      );
      assert.equal(svc.running.services.scheduler.driver, driver);

      const flakyRuns = await waitFor("the flaky job to succeed", async () => {
        const rows = await firstSlotRows(db, "flaky");
        return rows.some((r) => r.ok) ? rows : undefined;
      });
      assert.deepEqual(flakyRuns.map((r) => r.ok), [false, false, true]);
      const slot = flakyRuns[0].slot.toISOString();
      // Backoff doubles: 200 ms after the first failure, 400 ms after the second.
      const [first, second, third] = flakyRuns.map((r) => r.ran_at.getTime());
      assert.ok(second - first >= 190, `first wait ${second - first} ms`);
      assert.ok(third - second >= 390, `second wait ${third - second} ms`);
      // The job's own row is written inside the attempt; the run record is marked after it returns.
      const flakyRun = await waitFor("the flaky run to be marked", async () => {
        const run = await firstRun(db, "flaky");
        return run?.status === "running" ? undefined : run;
      });
      assert.deepEqual(flakyRun, { status: "succeeded", attempts: 3, error: null });

      await waitFor("the broken job to run out of attempts", async () => ((await firstRun(db, "broken"))?.attempts === 3 ? true : undefined));
      await sleep(1_000); // no fourth attempt comes
      const brokenRows = await firstSlotRows(db, "broken");
      assert.equal(brokenRows.length, 3);
      const brokenSlot = brokenRows[0].slot.toISOString();
      const brokenRun = (await firstRun(db, "broken"))!;
      assert.equal(brokenRun.status, "failed");
      assert.match(brokenRun.error!, /planned failure 3/);

      const failures = entries().filter((e) => e.job === "flaky" && e.slot === slot && /failed/.test(e.msg));
      assert.deepEqual(failures.map((e) => [e.attempt, e.maxAttempts, e.level]), [[1, 3, 40], [2, 3, 40]]);
      const last = entries().filter((e) => e.job === "broken" && e.slot === brokenSlot && e.msg === "scheduled job failed; no attempts left");
      assert.equal(last.length, 1);
      assert.equal(last[0].level, 50);
      assert.match(last[0].err.message, /planned failure 3/);
    });
  });
}

describe("a restarted single node (local driver)", () => {
  test("takes over a slot its previous process claimed and never finished, once the claim's lease has run out", async () => {
    const daily = { cron: "0 0 1 1 *", timezone: "UTC" };
    const { svc } = await serviceWith(() => [{ name: "interrupted", schedule: daily }], { redisUrl: null, schedulerEnabled: true });
    const slot = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000);
    // What a process killed in the middle of the slot leaves: its claim, running, the lease about to run out.
    await svc.sql(
      `INSERT INTO scheduled_runs (job_name, slot, status, attempts, started_at, lease_until)
       VALUES ('interrupted', $1, 'running', 1, now() - interval '1 minute', now() + interval '1 second')`,
      [slot],
    );
    const next = await startTestService({ redisUrl: null, schedulerEnabled: true }, svc.config.databaseUrl!, undefined, {
      extraJobs: (f) => [slotRecorderJob(f.db, { name: "interrupted", schedule: daily })],
    });
    started.push(next);
    const db = next.running.foundation.db;
    const run = await waitFor("the slot to be taken over", async () => {
      const row = await firstRun(db, "interrupted");
      return row?.status === "succeeded" ? row : undefined;
    });
    assert.deepEqual(run, { status: "succeeded", attempts: 2, error: null });
    assert.deepEqual((await slotRows(db, "interrupted")).map((r) => r.slot.getTime()), [slot.getTime()]);
  });
});

describe("SCHEDULER=off", () => {
  test("nothing fires in-process; the cron route still runs the job", async () => {
    const job: SlotRecorderSpec = { name: "ticked", schedule: { everyMs: 1_000 }, route: "tick" };
    const { svc, db } = await serviceWith(() => [job], { schedulerEnabled: false, cronSecret: "off-secret" });
    assert.equal(svc.running.services.scheduler.driver, "off");
    await sleep(2_500);
    assert.equal((await slotRows(db, job.name)).length, 0);

    const res = await rest(svc.baseUrl, "GET", "/api/cron/tick", { bearer: "off-secret" });
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, true);
    const ticked = res.body.runs.filter((r: any) => r.job === "ticked");
    assert.deepEqual(ticked.map((r: any) => [r.status, r.attempts]), [["succeeded", 1]]);
    assert.equal((await slotRows(db, job.name)).length, 1);
  });
});

describe("route calls of a job marked routeCall: now (docs/operations.md)", () => {
  test("every call runs it in a slot of its own at the call's instant, concurrent calls too; an unmarked job stays once per slot", async () => {
    // Daily schedules: every call of this test is in one slot of the unmarked job.
    const now: SlotRecorderSpec = { name: "on-every-call", schedule: { everyMs: 86_400_000 }, route: "scheduled-retrains", routeCall: "now", runMs: 300 };
    const slotted: SlotRecorderSpec = { name: "once-per-slot", schedule: { everyMs: 86_400_000 }, route: "scheduled-retrains" };
    const { svc, db } = await serviceWith(() => [now, slotted], { schedulerEnabled: false });
    const { scheduler } = svc.running.services;
    const outcomes = (runs: Awaited<ReturnType<typeof scheduler.runRoute>>, job: string) =>
      runs.filter((r) => r.job === job).map((r) => [r.slot.toISOString(), r.outcome.status, r.outcome.status === "skipped" ? r.outcome.reason : null]);
    const base = Math.floor(Date.now() / 86_400_000) * 86_400_000 + 3_600_000;
    const at = (ms: number) => new Date(base + ms);
    const day = new Date(base - 3_600_000).toISOString();

    const first = await scheduler.runRoute("scheduled-retrains", at(0));
    assert.deepEqual(outcomes(first, now.name), [[at(0).toISOString(), "succeeded", null]]);
    assert.deepEqual(outcomes(first, slotted.name), [[day, "succeeded", null]]);
    const second = await scheduler.runRoute("scheduled-retrains", at(1_000));
    assert.deepEqual(outcomes(second, now.name), [[at(1_000).toISOString(), "succeeded", null]], "a second call in the same slot runs again");
    assert.deepEqual(outcomes(second, slotted.name), [[day, "skipped", "already_succeeded"]]);

    // Overlapping calls at two instants both run; two calls at one instant claim one slot, and run it once.
    const overlapping = await Promise.all([at(2_000), at(2_001), at(3_000), at(3_000)].map((t) => scheduler.runRoute("scheduled-retrains", t)));
    const sorted = (list: unknown[][]) => list.map((o) => JSON.stringify(o)).sort();
    assert.deepEqual(
      sorted(overlapping.flatMap((runs) => outcomes(runs, now.name))),
      sorted([
        [at(2_000).toISOString(), "succeeded", null],
        [at(2_001).toISOString(), "succeeded", null],
        [at(3_000).toISOString(), "succeeded", null],
        [at(3_000).toISOString(), "skipped", "already_running"],
      ]),
    );
    assert.deepEqual(
      (await slotRows(db, now.name)).map((r) => r.slot.toISOString()),
      [0, 1_000, 2_000, 2_001, 3_000].map((ms) => at(ms).toISOString()),
    );
    const [rows] = await db.query(`SELECT slot, status FROM scheduled_runs WHERE job_name = $1 ORDER BY slot`, { bind: [now.name] });
    assert.deepEqual(
      (rows as Array<{ slot: Date; status: string }>).map((r) => [r.slot.toISOString(), r.status]),
      [0, 1_000, 2_000, 2_001, 3_000].map((ms) => [at(ms).toISOString(), "succeeded"]),
      "each call's run is recorded in scheduled_runs like any other",
    );
    assert.equal((await slotRows(db, slotted.name)).length, 1);
  });
});

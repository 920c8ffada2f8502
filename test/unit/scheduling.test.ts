import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { currentSlot, nextSlot, validateSchedule } from "../../src/scheduling/job-schedule.js";
import { JobRegistry } from "../../src/scheduling/job-registry.js";
import { retryDelayMs } from "../../src/scheduling/retry-policy.js";
import type { JobSchedule } from "../../src/scheduling/scheduled-job.js";
import { httpErrorResponse } from "../../src/transport/error-mapping.js";
import { ConfigError, loadConfig } from "../../src/config.js";

/** The AppError validateSchedule throws, as the REST door would answer it. */
function rejection(schedule: JobSchedule, field?: string) {
  try {
    validateSchedule(schedule, field);
  } catch (err) {
    const { status, body } = httpErrorResponse(err as never, "problem", "req");
    return { status, reason: body.reason, detail: body.detail as string, fields: (body.errors as Array<{ field: string }>).map((f) => f.field) };
  }
  return null;
}

describe("validateSchedule (spec 7: an invalid cron expression is 422)", () => {
  const invalidCron: Array<[string, string]> = [
    ["not a cron", "no fields"],
    ["61 * * * *", "minute out of range"],
    ["* * * * * * *", "seven fields (years are not accepted)"],
    ["* * * *", "four fields"],
    ["0 0 30 2 *", "never fires (30 February)"],
    ["", "empty"],
  ];
  for (const [cron, why] of invalidCron) {
    test(`422 INVALID_CRON_EXPRESSION naming the field: ${why}`, () => {
      const r = rejection({ cron, timezone: "UTC" }, "schedule");
      assert.equal(r?.status, 422);
      assert.equal(r?.reason, "INVALID_CRON_EXPRESSION");
      assert.deepEqual(r?.fields, ["schedule.cron"]);
      assert.match(r!.detail, /^schedule\.cron: /);
    });
  }

  for (const timezone of ["Mars/Olympus", "+05:00", "", "CEST"]) {
    test(`400 INVALID_TIMEZONE naming the field: "${timezone}"`, () => {
      const r = rejection({ cron: "0 3 * * *", timezone }, "report.schedule");
      assert.equal(r?.status, 400);
      assert.equal(r?.reason, "INVALID_TIMEZONE");
      assert.deepEqual(r?.fields, ["report.schedule.timezone"]);
    });
  }

  test("five and six fields, nicknames and IANA zones are accepted", () => {
    for (const schedule of [
      { cron: "*/5 * * * *", timezone: "UTC" },
      { cron: "30 */10 * * * *", timezone: "Europe/Berlin" },
      { cron: "0 9 * * MON-FRI", timezone: "America/New_York" },
      { cron: "@daily", timezone: "Asia/Kolkata" },
      { everyMs: 1_000 },
    ]) {
      assert.equal(rejection(schedule), null, JSON.stringify(schedule));
    }
  });

  test("an interval under a second, or fractional, is a 400 naming the field", () => {
    for (const everyMs of [999, 0, -1, 1500.5]) {
      const r = rejection({ everyMs });
      assert.equal(r?.status, 400);
      assert.deepEqual(r?.fields, ["schedule.everyMs"]);
    }
  });
});

describe("slots", () => {
  const at = (iso: string) => new Date(iso);

  test("cron slots are read in the job's time zone, across a DST change", () => {
    const berlin3am = { cron: "0 3 * * *", timezone: "Europe/Berlin" };
    // 29 March 2026: Berlin moves from UTC+1 to UTC+2.
    assert.equal(nextSlot(berlin3am, at("2026-03-28T12:00:00Z"))?.toISOString(), "2026-03-29T01:00:00.000Z");
    assert.equal(currentSlot(berlin3am, at("2026-03-29T00:59:59Z"))?.toISOString(), "2026-03-28T02:00:00.000Z");
    assert.equal(currentSlot(berlin3am, at("2026-03-29T01:00:00Z"))?.toISOString(), "2026-03-29T01:00:00.000Z", "a slot includes its first instant");
  });

  test("the next slot is strictly after, the current one at or before", () => {
    const everySecond = { cron: "* * * * * *", timezone: "UTC" };
    assert.equal(nextSlot(everySecond, at("2026-01-01T00:00:01.000Z"))?.toISOString(), "2026-01-01T00:00:02.000Z");
    assert.equal(currentSlot(everySecond, at("2026-01-01T00:00:01.999Z"))?.toISOString(), "2026-01-01T00:00:01.000Z");
  });

  test("intervals are aligned to the epoch, so every process and route computes the same slots", () => {
    const fiveSeconds = { everyMs: 5_000 };
    assert.equal(currentSlot(fiveSeconds, at("2026-01-01T00:00:07.300Z"))?.toISOString(), "2026-01-01T00:00:05.000Z");
    assert.equal(nextSlot(fiveSeconds, at("2026-01-01T00:00:05.000Z"))?.toISOString(), "2026-01-01T00:00:10.000Z");
  });
});

describe("retries and the registry", () => {
  test("backoff doubles from the base and is capped", () => {
    const policy = { attempts: 10, baseDelayMs: 1_000, maxDelayMs: 5_000 };
    assert.deepEqual([1, 2, 3, 4, 5].map((n) => retryDelayMs(policy, n)), [1_000, 2_000, 4_000, 5_000, 5_000]);
  });

  const job = (name: string, schedule: JobSchedule = { everyMs: 1_000 }) => ({ name, schedule, run: async () => {} });

  test("a duplicate name, a bad name or a bad schedule stops start-up", () => {
    assert.throws(() => new JobRegistry([job("a"), job("a")]), /registered twice/);
    assert.throws(() => new JobRegistry([job("Has Spaces")]), /lower-case letters, digits, dots and dashes/);
    assert.throws(() => new JobRegistry([job("bad", { cron: "nope", timezone: "UTC" })]), (err: any) => err.reason === "INVALID_CRON_EXPRESSION");
  });

  test("jobs are found by route", () => {
    const registry = new JobRegistry([{ ...job("alerts"), route: "tick" }, { ...job("expire"), route: "approvals-expire" }, job("quiet")]);
    assert.deepEqual(registry.onRoute("tick").map((j) => j.name), ["alerts"]);
    assert.deepEqual(registry.onRoute("scheduled-retrains"), []);
  });
});

describe("configuration", () => {
  test("SCHEDULER is on by default, off when asked, and anything else is refused", () => {
    assert.equal(loadConfig({}).schedulerEnabled, true);
    assert.equal(loadConfig({ SCHEDULER: "off" }).schedulerEnabled, false);
    assert.equal(loadConfig({ SCHEDULER: "ON" }).schedulerEnabled, true);
    assert.throws(() => loadConfig({ SCHEDULER: "false" }), (err) => err instanceof ConfigError && /SCHEDULER must be on or off/.test(err.message));
  });

  test("CRON_SECRET is unset unless given", () => {
    assert.equal(loadConfig({}).cronSecret, null);
    assert.equal(loadConfig({ CRON_SECRET: "s" }).cronSecret, "s");
  });
});

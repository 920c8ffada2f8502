import { test, describe, after } from "node:test";
import assert from "node:assert/strict";
import { isCalendarDate, isoToRfc3339, parseInstant, requireInstant } from "../../src/core/time.js";
import { prepareSnapshot, resolveRequestScope } from "../../src/core/index.js";

describe("ISO 8601 instants (spec: timestamps are ISO 8601 strings)", () => {
  test("date-only, zone-less and colon-less forms become RFC 3339 in UTC; other text is not ISO 8601", () => {
    const cases: Array<[string, string | null]> = [
      ["2025-01-01", "2025-01-01T00:00:00Z"],
      ["2025-01-01T10:30", "2025-01-01T10:30:00Z"],
      ["2025-01-01T10:30:15", "2025-01-01T10:30:15Z"],
      ["2025-01-01T10:30:15.123456", "2025-01-01T10:30:15.123456Z"],
      ["2025-01-01T10:30:15,5", "2025-01-01T10:30:15.5Z"],
      ["2025-01-01T10:30:15Z", "2025-01-01T10:30:15Z"],
      ["2025-01-01T10:30:15+0130", "2025-01-01T10:30:15+01:30"],
      ["2025-01-01T10:30:15-05", "2025-01-01T10:30:15-05:00"],
      ["2025-01-01T10:30+02:00", "2025-01-01T10:30:00+02:00"],
      ["yesterday", null],
      ["01/02/2025", null],
      ["2025-01-01 10:30", null],
    ];
    for (const [input, expected] of cases) assert.equal(isoToRfc3339(input), expected, input);
    assert.equal(isoToRfc3339("2025-01-31", true), "2025-01-31T23:59:59.999999999Z", "a range's last day ends at its last instant");
    assert.equal(isoToRfc3339("2025-01-31T12:00", true), "2025-01-31T12:00:00Z", "a time given is kept");
  });

  test("a zone-less instant is UTC whatever the server's zone (Date.parse alone reads it in local time)", () => {
    const zone = process.env.TZ;
    after(() => {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    });
    process.env.TZ = "America/New_York";
    assert.equal(new Date(Date.UTC(2025, 0, 1)).getHours(), 19, "the process now runs in New York");
    assert.equal(parseInstant("2025-01-01T10:00"), Date.UTC(2025, 0, 1, 10));
    assert.equal(parseInstant("2025-01-01T10:00:00"), Date.UTC(2025, 0, 1, 10));
    assert.equal(parseInstant("2025-01-01"), Date.UTC(2025, 0, 1));
    assert.equal(parseInstant("2025-01-01T10:00:00+01:00"), Date.UTC(2025, 0, 1, 9));
    assert.equal(parseInstant("not a date"), null);
  });
});

describe("calendar dates (spec 2.1-2.4: a timestamp names a day that exists)", () => {
  test("a day past its month's end, or February 29 outside a leap year, is not on the calendar", () => {
    const cases: Array<[string, boolean]> = [
      ["2030-02-30", false],
      ["2030-04-31T00:00:00Z", false],
      ["2031-02-29", false],
      ["2100-02-29", false],
      ["2030-00-10", false],
      ["2030-13-01", false],
      ["2030-01-00", false],
      ["2030-01-32", false],
      ["2028-02-29", true],
      ["2000-02-29", true],
      ["2030-01-31", true],
      ["2030-04-30T23:59:59Z", true],
      ["2030-12-31", true],
      ["tomorrow", false],
    ];
    for (const [text, expected] of cases) assert.equal(isCalendarDate(text), expected, text);
  });

  test("readers of instants refuse such a day instead of rolling it into the next month", () => {
    for (const bad of ["2030-02-30T00:00:00Z", "2030-04-31T00:00:00Z", "2031-02-29", "2031-02-29T12:00", "2030-02-30 10:00"]) {
      assert.equal(isoToRfc3339(bad), null, bad);
      assert.equal(parseInstant(bad), null, bad);
    }
    assert.equal(isoToRfc3339("2028-02-29T00:00:00Z"), "2028-02-29T00:00:00Z");
    assert.equal(parseInstant("2028-02-29"), Date.UTC(2028, 1, 29));
    assert.equal(parseInstant("2030-01-31T00:00:00Z"), Date.UTC(2030, 0, 31));
  });

  test("the time of day is left to the parser: a leap second stays refused, as before", () => {
    assert.equal(isoToRfc3339("2030-06-30T23:59:60Z"), "2030-06-30T23:59:60Z", "passed through");
    assert.equal(parseInstant("2030-06-30T23:59:60Z"), null, "and Date.parse refuses it");
  });
});

describe("instants a decision requires", () => {
  test("requireInstant throws on a missing or malformed instant, whatever it parsed before", () => {
    assert.throws(() => requireInstant(null, "now"), /now: not an ISO 8601 instant: null/);
    assert.equal(requireInstant("2025-01-01T10:00:00Z", "now"), Date.UTC(2025, 0, 1, 10));
    assert.throws(() => requireInstant(null, "now"), /now: not an ISO 8601 instant: null/);
    assert.throws(() => requireInstant(undefined, "offer o1 createdAt"), /offer o1 createdAt/);
    assert.throws(() => requireInstant("later", "now"), /later/);
  });

  test("a request scope's instant is each request's own, the last one kept for the scope's next resolution", () => {
    const snapshot = prepareSnapshot({ offers: [{ id: "o1", name: "O1", status: "active", priority: 50, businessValue: 50, createdAt: "2024-01-01T00:00:00Z" }] });
    const scope = (now: string) => resolveRequestScope(snapshot, { customerId: "c1", now }).nowMs;
    assert.equal(scope("2025-01-01T10:00:00Z"), Date.UTC(2025, 0, 1, 10));
    assert.equal(scope("2025-01-01T10:00:00Z"), Date.UTC(2025, 0, 1, 10));
    assert.equal(scope("2025-01-01T10:00:00.001Z"), Date.UTC(2025, 0, 1, 10) + 1);
    assert.equal(scope("2025-01-01T10:00:00Z"), Date.UTC(2025, 0, 1, 10));
    assert.throws(() => scope("not a date"), /now: not an ISO 8601 instant/);
    assert.equal(scope("2025-01-01T10:00:00Z"), Date.UTC(2025, 0, 1, 10), "a bad instant is not kept");
  });
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { LATENCY_BOUNDS_MS, LATENCY_BUCKETS, latencyBucket, latencyQuantile } from "../../src/observability/latency-histogram.js";
import { minuteRange } from "../../src/observability/request-stats.js";

const histogram = (entries: Record<number, number>) => {
  const counts = new Array<number>(LATENCY_BUCKETS).fill(0);
  for (const [i, n] of Object.entries(entries)) counts[Number(i)] = n;
  return counts;
};

test("a duration falls in the first bucket whose upper bound holds it", () => {
  const cases: Array<[number, number]> = [
    [0, 0],
    [0.4, 0],
    [1, 0],
    [1.01, 1],
    [15, LATENCY_BOUNDS_MS.indexOf(15)],
    [15.5, LATENCY_BOUNDS_MS.indexOf(20)],
    [60_000, LATENCY_BOUNDS_MS.length - 1],
    [60_001, LATENCY_BOUNDS_MS.length],
    [3_600_000, LATENCY_BOUNDS_MS.length],
  ];
  for (const [ms, bucket] of cases) assert.equal(latencyBucket(ms), bucket, `${ms} ms`);
});

test("quantiles interpolate inside the bucket that holds them, as histogram_quantile does", () => {
  const i100 = LATENCY_BOUNDS_MS.indexOf(100);
  const cases: Array<[string, number[], number, number | null]> = [
    ["empty", histogram({}), 0.99, null],
    ["all in (80, 100]: the p50 is halfway", histogram({ [i100]: 10 }), 0.5, 90],
    ["all in (80, 100]: the p99 near the top", histogram({ [i100]: 100 }), 0.99, 99.8],
    ["first bucket starts at 0", histogram({ 0: 4 }), 0.5, 0.5],
    ["99 fast, 1 slow: p99 is the top of the fast bucket", histogram({ 0: 99, [i100]: 1 }), 0.99, 1],
    ["98 fast, 2 slow: p99 in the slow bucket", histogram({ 0: 98, [i100]: 2 }), 0.99, 90],
    ["beyond the last bound reads as the last bound", histogram({ [LATENCY_BUCKETS - 1]: 5 }), 0.99, 60_000],
  ];
  for (const [name, counts, q, expected] of cases) {
    const got = latencyQuantile(counts, q);
    if (expected === null) assert.equal(got, null, name);
    else assert.ok(Math.abs(got! - expected) < 1e-9, `${name}: ${got}`);
  }
});

test("a window is widened to whole minutes and bounded by the retention and the present", () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 30);
  const minute = (iso: string) => Date.parse(iso) / 60_000;
  const day = 24 * 3600_000;
  assert.deepEqual(minuteRange(new Date("2026-01-01T11:55:10Z"), new Date("2026-01-01T11:58:00Z"), day, now), {
    fromMinute: minute("2026-01-01T11:55:00Z"),
    toMinute: minute("2026-01-01T11:58:00Z"),
  });
  assert.deepEqual(minuteRange(new Date("2026-01-01T11:55:00Z"), new Date("2026-01-01T11:58:01Z"), day, now), {
    fromMinute: minute("2026-01-01T11:55:00Z"),
    toMinute: minute("2026-01-01T11:59:00Z"),
  });
  assert.deepEqual(minuteRange(new Date("2020-01-01T00:00:00Z"), new Date("2030-01-01T00:00:00Z"), day, now), {
    fromMinute: minute("2025-12-31T12:00:00Z"),
    toMinute: minute("2026-01-01T12:01:00Z"),
  });
});

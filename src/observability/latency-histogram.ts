/**
 * The fixed latency buckets of the shared request statistics. Fixed bounds are what make a p99
 * computable across processes and minutes: histograms with the same bounds merge by adding counts,
 * where percentiles themselves cannot be merged. Steps of about 20-25% bound the estimate's error
 * to one step; the last bucket is unbounded.
 */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200, 250, 300, 400, 500, 600, 800,
  1_000, 1_200, 1_500, 2_000, 2_500, 3_000, 4_000, 5_000, 6_000, 8_000, 10_000, 15_000, 20_000, 30_000, 60_000,
];

/** Buckets per histogram: one per bound plus the unbounded one. */
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** The index of the first bucket whose upper bound (inclusive) holds `ms`. */
export function latencyBucket(ms: number): number {
  let lo = 0;
  let hi = LATENCY_BOUNDS_MS.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ms <= LATENCY_BOUNDS_MS[mid]) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The q-quantile of a histogram, interpolated linearly inside the bucket that holds it, as
 * Prometheus' histogram_quantile does; a quantile in the unbounded bucket is reported as the
 * largest bound. Null for an empty histogram.
 */
export function latencyQuantile(counts: ArrayLike<number>, q: number): number | null {
  let total = 0;
  for (let i = 0; i < counts.length; i++) total += counts[i];
  if (total === 0) return null;
  const rank = q * total;
  let below = 0;
  for (let i = 0; i < counts.length; i++) {
    const inBucket = counts[i];
    if (inBucket > 0 && below + inBucket >= rank) {
      if (i >= LATENCY_BOUNDS_MS.length) return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
      const lower = i === 0 ? 0 : LATENCY_BOUNDS_MS[i - 1];
      const upper = LATENCY_BOUNDS_MS[i];
      return lower + ((upper - lower) * (rank - below)) / inBucket;
    }
    below += inBucket;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
}

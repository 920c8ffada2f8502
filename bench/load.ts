/**
 * The in-process load generator, for the lanes h2load cannot drive (requests that must differ,
 * bench/h2-frames.ts), and the lane result every lane reports.
 *
 * - `closedLoop` keeps a fixed number of requests in flight for a fixed time: the maximum
 *   throughput at that concurrency.
 *
 * Histograms are Node's built-in `perf_hooks.createHistogram` (a binding of HdrHistogram_c),
 * recording microseconds with three significant figures. Only answered requests are recorded;
 * errors, skipped sends and requests unanswered at the end are counted separately (`failures`).
 */
import { createHistogram, monitorEventLoopDelay, performance, type RecordableHistogram } from "node:perf_hooks";

export type Call = (i: number) => Promise<unknown>;

export interface LaneResult {
  mode: "open" | "closed";
  /** Offered rate (open loop) or null (closed loop). */
  targetRate: number | null;
  concurrency: number | null;
  durationMs: number;
  ok: number;
  errors: number;
  /** Open loop only: requests never sent because maxInFlight was reached (counted as failures). */
  skipped: number;
  /** Requests still unanswered when the lane's grace period ran out (counted as failures). */
  timedOut: number;
  firstError: string | null;
  /** Completed requests per second over the lane. */
  throughput: number;
  latency: LatencySummary;
  /** The load generator's own event-loop delay p99 (ms), to tell client stalls from server ones. */
  clientEventLoopP99Ms: number;
}

export interface LatencySummary {
  /** milliseconds */
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  count: number;
}

export function newHistogram(): RecordableHistogram {
  // 1 µs .. 120 s, 3 significant figures.
  return createHistogram({ lowest: 1, highest: 120_000_000, figures: 3 });
}

export function summarize(h: RecordableHistogram): LatencySummary {
  const ms = (us: number) => us / 1000;
  if (h.count === 0) return { p50: NaN, p90: NaN, p99: NaN, p999: NaN, max: NaN, mean: NaN, count: 0 };
  return {
    p50: ms(h.percentile(50)),
    p90: ms(h.percentile(90)),
    p99: ms(h.percentile(99)),
    p999: ms(h.percentile(99.9)),
    max: ms(h.max),
    mean: ms(h.mean),
    count: h.count,
  };
}

const recordMs = (h: RecordableHistogram, ms: number) => h.record(Math.max(1, Math.round(ms * 1000)));

/** The event-loop delay of this (the load generator's) process during `fn`, p99 in ms. */
const ELD_RESOLUTION_MS = 10;
async function withClientDelay<T>(fn: () => Promise<T>): Promise<{ value: T; p99: number }> {
  const eld = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  eld.enable();
  try {
    const value = await fn();
    return { value, p99: eld.count ? Math.max(0, eld.percentile(99) / 1e6 - ELD_RESOLUTION_MS) : NaN };
  } finally {
    eld.disable();
  }
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err)).slice(0, 300);

export interface ClosedLoopOptions {
  concurrency: number;
  durationMs: number;
}

/** `concurrency` callers, each sending its next request as soon as the previous one answers. */
export async function closedLoop(call: Call, o: ClosedLoopOptions): Promise<LaneResult> {
  const h = newHistogram();
  let ok = 0;
  let errors = 0;
  let firstError: string | null = null;
  let n = 0;
  const start = performance.now();
  const end = start + o.durationMs;
  const { p99 } = await withClientDelay(() =>
    Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        while (performance.now() < end) {
          const t0 = performance.now();
          try {
            await call(n++);
            ok++;
            recordMs(h, performance.now() - t0);
          } catch (err) {
            errors++;
            firstError ??= errorText(err);
            // A failing target answers fast; do not spin on it.
            await new Promise((r) => setTimeout(r, 1));
          }
        }
      }),
    ),
  );
  const elapsed = performance.now() - start;
  return {
    mode: "closed",
    targetRate: null,
    concurrency: o.concurrency,
    durationMs: o.durationMs,
    ok,
    errors,
    skipped: 0,
    timedOut: 0,
    firstError,
    throughput: (ok / elapsed) * 1000,
    latency: summarize(h),
    clientEventLoopP99Ms: p99,
  };
}

/** Runs the target for a while without recording: JIT, caches, connection pools. */
export async function warmUp(call: Call, ms: number, concurrency = 8): Promise<void> {
  if (ms <= 0) return;
  await closedLoop(call, { concurrency, durationMs: ms });
}

/** Calls 0..n-1 once each, `concurrency` at a time, without recording; returns how many were answered. */
export const failures = (r: LaneResult) => r.errors + r.skipped + r.timedOut;

/** The median of `xs`: the middle value, or the mean of the two middle ones. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * Load generators and HDR histograms for the benchmark.
 *
 * - `openLoop` schedules request i at `start + i / rate` whatever happened to the earlier ones, and
 *   measures each latency from that *scheduled* time, so a stall on either side shows up as latency
 *   instead of silently lowering the offered load (no coordinated omission, as in wrk2).
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

export interface OpenLoopOptions {
  rate: number;
  durationMs: number;
  /** Beyond this many outstanding requests new ones are not sent but counted as skipped. */
  maxInFlight?: number;
  /** How long to wait for stragglers after the last scheduled send. */
  graceMs?: number;
}

/** Fixed-rate load: request i is due at start + i/rate; latency counts from that due time. */
export async function openLoop(call: Call, o: OpenLoopOptions): Promise<LaneResult> {
  const { rate, durationMs } = o;
  const maxInFlight = o.maxInFlight ?? 5_000;
  const graceMs = o.graceMs ?? 5_000;
  const total = Math.max(1, Math.round((rate * durationMs) / 1000));
  const intervalMs = 1000 / rate;
  const h = newHistogram();
  let sent = 0;
  let ok = 0;
  let errors = 0;
  let skipped = 0;
  let inFlight = 0;
  let firstError: string | null = null;
  let lastDone = 0;
  const start = performance.now() + 5;
  const { value: timedOut, p99 } = await withClientDelay(
    () =>
      new Promise<number>((resolve) => {
        let finished = false;
        let timer: NodeJS.Timeout | undefined;
        const finish = () => {
          if (finished) return;
          finished = true;
          clearTimeout(timer);
          clearTimeout(hardStop);
          resolve(inFlight);
        };
        const hardStop = setTimeout(finish, durationMs + graceMs + 50);
        const tick = () => {
          const now = performance.now();
          while (sent < total && start + sent * intervalMs <= now) {
            const scheduled = start + sent * intervalMs;
            const i = sent++;
            if (inFlight >= maxInFlight) {
              skipped++;
              continue;
            }
            inFlight++;
            call(i).then(
              () => {
                if (finished) return;
                const end = performance.now();
                ok++;
                lastDone = end;
                recordMs(h, end - scheduled);
              },
              (err) => {
                if (finished) return;
                errors++;
                lastDone = performance.now();
                firstError ??= errorText(err);
              },
            ).finally(() => {
              inFlight--;
              if (sent >= total && inFlight === 0) finish();
            });
          }
          if (sent < total) timer = setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
          else if (inFlight === 0) finish();
        };
        timer = setTimeout(tick, Math.max(0, start - performance.now()));
      }),
  );
  const elapsed = Math.max(durationMs, (lastDone || performance.now()) - start);
  return {
    mode: "open",
    targetRate: rate,
    concurrency: null,
    durationMs,
    ok,
    errors,
    skipped,
    timedOut,
    firstError,
    throughput: (ok / elapsed) * 1000,
    latency: summarize(h),
    clientEventLoopP99Ms: p99,
  };
}

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
export async function callEachOnce(call: Call, n: number, concurrency: number): Promise<number> {
  let next = 0;
  let ok = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) await call(next++).then(() => ok++, () => undefined);
    }),
  );
  return ok;
}

/** Failures of a lane: errors, skipped sends and requests left unanswered. */
export const failures = (r: LaneResult) => r.errors + r.skipped + r.timedOut;

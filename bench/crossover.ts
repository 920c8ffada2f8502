/**
 * Inline or pool: times `scoreCandidates(task)` on the event loop against the same task sent to a
 * Piscina pool built exactly as the service builds it (src/platform/scoring-pool.ts, one task per
 * request), for gradient-boosted tasks of growing trees × candidates.
 *
 * What the pool buys is event-loop time, not latency: a worker runs the same code, and the task
 * and its scores cross threads each way (models and offers by reference after the first task,
 * src/core/scoring/pooled-task.ts), so a pooled task always answers later than an inline one. The
 * crossover is therefore taken where the main thread spends less CPU on a pooled task (send,
 * receive, unpack) than it would scoring it inline. CPU, not wall time: on a shared machine other
 * processes stretch wall time, not the thread's CPU time.
 *
 * Explanations are off by default, as on a Recommend without `explain`: explanations come back by
 * structured clone, one array per candidate, and move the crossover up (`explain: true`).
 *
 * Runs standalone too: `node --import tsx bench/crossover.ts`.
 */
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { compileModel, NO_EVIDENCE, scoreCandidates, treeWalks, type ScoreTask, type ScoringOffer } from "../src/core/index.js";
import { createScoringPool } from "../src/platform/scoring-pool.js";
import { createLogger } from "../src/platform/logger.js";
import { DEFAULT_POOL_MIN_TREE_WALKS } from "../src/config.js";
import { customers, xgboostTrees } from "./workload.js";
import { median } from "./load.js";

export interface CrossoverPoint {
  trees: number;
  candidates: number;
  walks: number;
  /** Median ms on the event loop, inline. */
  inlineMs: number;
  /** Median round trip of pool.run, ms. */
  poolRoundTripMs: number;
  /** Main-thread CPU per pooled task (send, result in, unpack), ms. */
  poolLoopMs: number;
  /** Main-thread CPU per inline task, ms: like inlineMs, but not inflated by other processes taking the core. */
  inlineCpuMs: number;
}

export interface CrossoverResult {
  explain: boolean;
  points: CrossoverPoint[];
  /** Smallest measured tree walks from which pooling costs the event loop less than inline scoring, per candidate count. */
  crossoverByCandidates: Record<number, number | null>;
  /** The same as one threshold: walks above which the pool wins at every measured point. */
  crossoverWalks: number | null;
  defaultThreshold: number;
  /** Median ms to compile the ensemble, once per model version in the service and in each worker. */
  compileMsByTrees: Record<number, number>;
  /** Size of the ensemble as JSON, which reaches each worker once per model version. */
  jsonBytesByTrees: Record<number, number>;
}

function task(trees: number, candidates: number, explain: boolean): ScoreTask {
  const who = customers(1)[0];
  const offers: ScoringOffer[] = Array.from({ length: candidates }, (_, i) => ({
    id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    priority: (i * 37) % 101,
    businessValue: (i * 53) % 101,
  }));
  return {
    candidates: offers,
    customer: who.attributes,
    context: who.context,
    models: { gbt: { id: "gbt", key: "gbt", type: "gradient_boosted", trees: xgboostTrees(trees, 4) } },
    modelKey: "gbt",
    shadowModelKeys: [],
    evidence: NO_EVIDENCE,
    clv: null,
    seed: "crossover",
    explain,
  };
}

/**
 * CPU time of the calling thread, ms (Linux: /proc/thread-self/schedstat, in ns). Unlike wall
 * time or event-loop utilisation, other processes on a shared machine do not inflate it.
 */
export function threadCpuMs(): number {
  return Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ")[0]) / 1e6;
}

/** Repeats `fn` for about `budgetMs` (between `min` and `max` runs). */
async function repeat(fn: () => unknown, budgetMs: number, min = 7, max = 400): Promise<number[]> {
  const times: number[] = [];
  const until = performance.now() + budgetMs;
  while (times.length < min || (times.length < max && performance.now() < until)) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return times;
}

export async function measureCrossover(
  opts: { trees?: number[]; candidates?: number[]; budgetMs?: number; explain?: boolean; log?: (s: string) => void } = {},
): Promise<CrossoverResult> {
  const treeCounts = opts.trees ?? [5, 10, 25, 50, 100, 200, 400];
  const candidateCounts = opts.candidates ?? [20, 50, 200];
  const budgetMs = opts.budgetMs ?? 250;
  const explain = opts.explain ?? false;
  // A deadline no measured task reaches: this measures the pool, not the inline fallback.
  const pool = createScoringPool(createLogger("silent"), { timeoutMs: 60_000 });
  const points: CrossoverPoint[] = [];
  const compileMsByTrees: Record<number, number> = {};
  const jsonBytesByTrees: Record<number, number> = {};
  try {
    // Warm both paths (JIT in the main thread and in the worker).
    const warm = task(50, 50, explain);
    for (let i = 0; i < 30; i++) {
      scoreCandidates(warm);
      await pool.score("crossover", warm);
    }
    for (const trees of treeCounts) {
      const model = task(trees, 1, explain).models.gbt;
      compileMsByTrees[trees] = median(await repeat(() => compileModel(model), budgetMs / 2));
      jsonBytesByTrees[trees] = JSON.stringify(model).length;
    }
    opts.log?.(`  compile once per task: ${treeCounts.map((t) => `${t} trees ${compileMsByTrees[t].toFixed(3)} ms`).join(", ")}`);
    for (const candidates of candidateCounts) {
      for (const trees of treeCounts) {
        const t = task(trees, candidates, explain);
        const cpu0 = threadCpuMs();
        const inline = await repeat(() => scoreCandidates(t), budgetMs);
        const inlineCpuMs = (threadCpuMs() - cpu0) / inline.length;
        // The first task of a model version brings it to the worker, which keeps it (as the service's).
        await pool.score("crossover", t);
        const cpu1 = threadCpuMs();
        const roundTrips = await repeat(() => pool.score("crossover", t), budgetMs);
        const poolLoopMs = (threadCpuMs() - cpu1) / roundTrips.length;
        const point: CrossoverPoint = {
          trees,
          candidates,
          walks: treeWalks(t),
          inlineMs: median(inline),
          poolRoundTripMs: median(roundTrips),
          poolLoopMs,
          inlineCpuMs,
        };
        points.push(point);
        opts.log?.(
          `  trees ${String(trees).padStart(3)} × candidates ${String(candidates).padStart(3)} = ${String(point.walks).padStart(6)} walks: ` +
            `inline ${point.inlineMs.toFixed(3)} ms (main-thread CPU ${point.inlineCpuMs.toFixed(3)} ms), pool round trip ${point.poolRoundTripMs.toFixed(3)} ms, ` +
            `pool main-thread CPU ${point.poolLoopMs.toFixed(3)} ms`,
        );
      }
    }
  } finally {
    await pool.close();
  }
  const crossoverByCandidates: Record<number, number | null> = {};
  for (const c of candidateCounts) {
    const row = points.filter((p) => p.candidates === c).sort((a, b) => a.walks - b.walks);
    // The first point from which the pool wins at this and every larger size.
    let from: number | null = null;
    for (let i = row.length - 1; i >= 0 && row[i].poolLoopMs < row[i].inlineCpuMs; i--) from = row[i].walks;
    crossoverByCandidates[c] = from;
  }
  const sorted = [...points].sort((a, b) => a.walks - b.walks);
  let crossoverWalks: number | null = null;
  for (let i = sorted.length - 1; i >= 0 && sorted[i].poolLoopMs < sorted[i].inlineCpuMs; i--) crossoverWalks = sorted[i].walks;
  return { explain, points, crossoverByCandidates, crossoverWalks, defaultThreshold: DEFAULT_POOL_MIN_TREE_WALKS, compileMsByTrees, jsonBytesByTrees };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  measureCrossover({ log: console.log }).then((r) => {
    console.log(JSON.stringify({ crossoverByCandidates: r.crossoverByCandidates, crossoverWalks: r.crossoverWalks, defaultThreshold: r.defaultThreshold }));
  });
}

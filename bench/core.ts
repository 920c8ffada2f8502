/**
 * The decision core alone, in this process: CPU and bytes allocated per decision over the bench's
 * catalog (200 active offers, the default adaptive model, two thirds of them with evidence), with
 * the inputs built as the service builds them (evidenceKeys, counterPlan) and not counted.
 *
 * CPU says how much of a Recommend the decision itself is (the summary sets it beside the
 * service's CPU per Recommend). Bytes say how often it makes the service scavenge, which on a
 * busy two-core VM pauses the event loop 2-4 ms each time (docs/performance.md, nineteenth and
 * twentieth sessions). They come from V8's sampling heap profiler with the objects that young and
 * old collections took counted in, so they are all that was allocated, not what stayed.
 *
 * Runs standalone too: `node --import tsx bench/core.ts`.
 */
import { Session } from "node:inspector/promises";
import { pathToFileURL } from "node:url";
import {
  completeDecision,
  counterPlan,
  evidenceKeys,
  prepareDecision,
  prepareSnapshot,
  scoreCandidates,
  type DecisionInput,
  type Offer,
} from "../src/core/index.js";
import { customers, offerBody } from "./workload.js";

export interface CoreResult {
  offers: number;
  decisions: number;
  cpuMsPerDecision: number;
  bytesPerDecision: number;
}

const OFFERS = 200;
/** Distinct inputs the decisions cycle through, each with its own seed and instant. */
const INPUTS = 64;

function bench(): { run: (n: number) => number } {
  const offers = Array.from({ length: OFFERS }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, createdAt: "2026-01-01T00:00:00Z", ...offerBody(i) })) as Offer[];
  const snapshot = prepareSnapshot({ offers });
  const [who] = customers(1);
  const inputs = Array.from({ length: INPUTS }, (_, n): DecisionInput => {
    const input: DecisionInput = {
      customerId: who.customerId,
      customer: { ...who.attributes },
      context: { ...who.context },
      now: new Date(Date.UTC(2026, 10, 29, 12, 0, n)).toISOString(),
      clv: null,
      seed: `seed-${n}`,
    };
    const keys = evidenceKeys(snapshot, input);
    const plan = counterPlan(snapshot, input);
    input.counters = {};
    input.counterChecks = plan.checks;
    input.evidence = { keys, counts: keys.map((_, i) => (i % 3 ? { successes: i % 7, trials: 20 + i } : null)) };
    input.recentOutcomes = [];
    return input;
  });
  return {
    run(n) {
      let returned = 0;
      for (let i = 0; i < n; i++) {
        const prepared = prepareDecision(snapshot, inputs[i % INPUTS]);
        returned += completeDecision(prepared, scoreCandidates(prepared.scoreTask)).offers.length;
      }
      return returned;
    },
  };
}

export async function measureCore(opts: { decisions?: number; log?: (line: string) => void } = {}): Promise<CoreResult> {
  const decisions = opts.decisions ?? 20_000;
  const { run } = bench();
  // Optimised code, as the service runs it after its warm-up.
  if (run(decisions) === 0) throw new Error("bench core: the decisions returned no offers");
  const before = process.cpuUsage();
  run(decisions);
  const cpu = process.cpuUsage(before);
  const session = new Session();
  session.connect();
  await session.post("HeapProfiler.enable");
  // A sample every 256 bytes on average: fine enough for a per-decision figure from a few thousand decisions.
  await session.post("HeapProfiler.startSampling", { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  const sampled = Math.ceil(decisions / 4);
  run(sampled);
  const { profile } = await session.post("HeapProfiler.stopSampling");
  session.disconnect();
  let bytes = 0;
  const walk = (node: typeof profile.head): void => {
    bytes += node.selfSize;
    node.children.forEach(walk);
  };
  walk(profile.head);
  const result = { offers: OFFERS, decisions, cpuMsPerDecision: (cpu.user + cpu.system) / 1000 / decisions, bytesPerDecision: bytes / sampled };
  opts.log?.(`  ${OFFERS} offers, adaptive: ${(result.cpuMsPerDecision * 1000).toFixed(1)} µs CPU and ${(result.bytesPerDecision / 1024).toFixed(1)} KB allocated per decision (${decisions} decisions timed, ${sampled} sampled)`);
  return result;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await measureCore({ log: console.log });

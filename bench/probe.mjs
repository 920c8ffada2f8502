/**
 * Preloaded into a server process the benchmark starts (`node --import tsx --import
 * bench/probe.mjs src/main.ts`), so the service's own event-loop delay, event-loop utilisation
 * and CPU time are measured inside it without changing src/. It talks to the benchmark over the
 * IPC channel that `spawn(..., {stdio: [..., "ipc"]})` opens; without one, or in a worker thread,
 * it does nothing.
 *
 * Plain JavaScript on purpose: worker threads (the service's Piscina scoring pool) inherit
 * `execArgv`, and a worker must be able to load this file before any TypeScript loader is ready.
 *
 * Messages: {id, cmd: "reset"} starts a measurement window; {id, cmd: "report"} answers with the
 * window's figures (the ProbeReport of bench/stack.ts). Under a supervisor (WORKERS > 1) the
 * service processes are cluster workers that load this probe too; the supervisor's probe passes
 * each message on to them and answers with CPU time summed over all processes and the event-loop
 * figures of the worst one (the highest delay p99, the busiest loop). When the benchmark process goes away the
 * channel closes and the probe sends SIGTERM to its own process, so a killed benchmark never
 * leaves a server behind.
 */
import cluster from "node:cluster";
import { isMainThread } from "node:worker_threads";
import { monitorEventLoopDelay, performance } from "node:perf_hooks";

/** Node's histogram counts the whole timer interval; the delay is what exceeds it. */
const RESOLUTION_MS = 10;

if (isMainThread && typeof process.send === "function") {
  const eld = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  eld.enable();
  let elu = performance.eventLoopUtilization();
  let cpu = process.cpuUsage();
  let since = performance.now();
  const ms = (ns) => Math.max(0, ns / 1e6 - RESOLUTION_MS);
  const measure = {
    reset() {
      eld.reset();
      elu = performance.eventLoopUtilization();
      cpu = process.cpuUsage();
      since = performance.now();
    },
    report() {
      const used = process.cpuUsage(cpu);
      const some = eld.count > 0;
      return {
        eventLoopDelay: {
          p50: some ? ms(eld.percentile(50)) : NaN,
          p99: some ? ms(eld.percentile(99)) : NaN,
          p999: some ? ms(eld.percentile(99.9)) : NaN,
          max: some ? ms(eld.max) : NaN,
          samples: eld.count,
        },
        eventLoopUtilization: performance.eventLoopUtilization(elu).utilization,
        cpuMs: (used.user + used.system) / 1000,
        wallMs: performance.now() - since,
      };
    },
  };
  let seq = 0;
  const ask = (worker, cmd) =>
    new Promise((resolve) => {
      const id = `probe-${++seq}`;
      const onMessage = (m) => {
        if (m?.id !== id) return;
        worker.off("message", onMessage);
        resolve(m.report);
      };
      worker.on("message", onMessage);
      worker.send({ id, cmd });
    });
  /** The worst process's loop, everyone's CPU. */
  const combine = (own, reports) => {
    const worst = reports.reduce((a, b) => (b.eventLoopDelay.p99 > a.eventLoopDelay.p99 ? b : a));
    return {
      eventLoopDelay: worst.eventLoopDelay,
      eventLoopUtilization: Math.max(...reports.map((r) => r.eventLoopUtilization)),
      cpuMs: own.cpuMs + reports.reduce((n, r) => n + r.cpuMs, 0),
      wallMs: own.wallMs,
    };
  };
  process.on("message", async (m) => {
    if (!m || typeof m !== "object" || (m.cmd !== "reset" && m.cmd !== "report")) return;
    const workers = cluster.isPrimary ? Object.values(cluster.workers ?? {}).filter(Boolean) : [];
    const replies = await Promise.all(workers.map((w) => ask(w, m.cmd)));
    if (m.cmd === "reset") {
      measure.reset();
      process.send({ id: m.id, ok: true });
    } else {
      const own = measure.report();
      process.send({ id: m.id, report: workers.length ? combine(own, replies) : own });
    }
  });
  process.on("disconnect", () => {
    process.stderr.write(`bench/probe.mjs: the benchmark's IPC channel closed; stopping process ${process.pid}\n`);
    process.kill(process.pid, "SIGTERM");
  });
}

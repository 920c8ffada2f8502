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
 * window's figures (the ProbeReport of bench/stack.ts). When the benchmark process goes away the
 * channel closes and the probe sends SIGTERM to its own process, so a killed benchmark never
 * leaves a server behind.
 */
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
  process.on("message", (m) => {
    if (!m || typeof m !== "object") return;
    if (m.cmd === "reset") {
      eld.reset();
      elu = performance.eventLoopUtilization();
      cpu = process.cpuUsage();
      since = performance.now();
      process.send({ id: m.id, ok: true });
    } else if (m.cmd === "report") {
      const used = process.cpuUsage(cpu);
      const some = eld.count > 0;
      process.send({
        id: m.id,
        report: {
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
        },
      });
    }
  });
  process.on("disconnect", () => {
    process.stderr.write(`bench/probe.mjs: the benchmark's IPC channel closed; stopping process ${process.pid}\n`);
    process.kill(process.pid, "SIGTERM");
  });
}

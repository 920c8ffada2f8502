import cluster, { type Worker } from "node:cluster";
import type { Logger } from "./platform/logger.js";

/**
 * Runs `count` service processes that share the HTTP and gRPC ports (WORKERS). node:cluster hands
 * each accepted connection to one of them in turn, so load spreads per connection: an HTTP/2 client
 * that keeps one connection talks to one process, and clients or a proxy in front open several.
 * Every process is a whole service; they already share what must be shared (Postgres, Redis
 * counters, configuration invalidation over pub/sub).
 *
 * A process that exits before it ever listened is a start-up failure: the others are stopped and
 * the supervisor exits non-zero, as a single process would. One that dies later is replaced.
 * SIGTERM or SIGINT drains every process, then the supervisor exits.
 */
export function superviseWorkers(count: number, logger: Logger): void {
  const listened = new Set<number>();
  /** Ours, not cluster.workers: a worker leaves that only once its IPC channel has closed too. */
  const live = new Set<Worker>();
  let stopping = false;
  let exitCode = 0;

  const stop = (code: number) => {
    exitCode = Math.max(exitCode, code);
    if (stopping) return;
    stopping = true;
    for (const worker of live) worker.process.kill("SIGTERM");
    if (live.size === 0) process.exit(exitCode);
  };

  const fork = () => {
    const worker = cluster.fork();
    live.add(worker);
    worker.on("listening", () => listened.add(worker.id));
    worker.on("exit", (code, signal) => {
      live.delete(worker);
      if (stopping) {
        if (live.size === 0) process.exit(exitCode);
        return;
      }
      if (!listened.has(worker.id)) {
        logger.error({ pid: worker.process.pid, code, signal }, "a service process failed to start; stopping the others");
        stop(1);
        return;
      }
      logger.error({ pid: worker.process.pid, code, signal }, "a service process exited; starting another");
      fork();
    });
  };

  logger.info({ workers: count }, "starting service processes");
  for (let i = 0; i < count; i++) fork();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      logger.info({ signal }, "draining every service process");
      stop(0);
    });
  }
}

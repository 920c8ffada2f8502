import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { Redis } from "ioredis";
import { freePort } from "../../src/platform/embedded-postgres.js";

export interface PrivateRedis {
  url: string;
  /** Kills the server, as an outage would. */
  stop(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
}

/**
 * A redis-server of this test file's own, for tests that take Redis away from a running service
 * (the shared one of test/services.sh must stay up for the other files).
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => 50, maxRetriesPerRequest: null });
    probe.on("error", () => {}); // refused until the server listens
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`redis-server on ${port} did not answer`)), 10_000).unref());
    try {
      await Promise.race([probe.ping(), timeout]);
    } finally {
      probe.disconnect();
    }
  };
  await start();
  return {
    url,
    start,
    async stop() {
      const exited = once(child!, "exit");
      child!.kill("SIGKILL");
      await exited;
    },
  };
}

import { spawn, execFile, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import { freePort } from "../../src/platform/embedded-postgres.js";
import type { RedisNode } from "../../src/platform/redis.js";

const run = promisify(execFile);

export interface RedisClusterUnderTest {
  /** The masters, for REDIS_CLUSTER_NODES (config.redisClusterNodes). */
  nodes: RedisNode[];
  /** Stops every server and removes their files. */
  stop(): Promise<void>;
}

/** How long the servers, the cluster creation and the slot agreement may take together. */
const START_TIMEOUT_MS = 30_000;

async function redisCli(port: number, ...args: string[]): Promise<string> {
  const { stdout } = await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { timeout: 10_000 });
  return stdout;
}

async function until(what: string, deadline: number, check: () => Promise<boolean>): Promise<void> {
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`redis cluster: ${what} within ${START_TIMEOUT_MS} ms`);
    await sleep(100);
  }
}

/**
 * A real Redis Cluster of `masters` masters and no replicas, from Debian's redis-server and
 * redis-cli, on free loopback ports (the cluster bus on ports of its own, since port + 10000 may
 * not exist), in a directory of its own. Waits until every node reports `cluster_state:ok`, so the
 * slots are agreed before the service connects. Fails (never skips) when the programs are missing.
 */
export async function startRedisCluster(masters = 3): Promise<RedisClusterUnderTest> {
  const dir = await mkdtemp(join(tmpdir(), "redis-cluster-"));
  const children: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = once(child, "exit");
        child.kill("SIGKILL");
        await exited;
      }),
    );
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + START_TIMEOUT_MS;
    const nodes: RedisNode[] = [];
    for (let i = 0; i < masters; i++) {
      const [port, busPort] = [await freePort(), await freePort()];
      const child = spawn(
        "redis-server",
        [
          "--port", String(port),
          "--cluster-port", String(busPort),
          "--bind", "127.0.0.1",
          "--cluster-enabled", "yes",
          "--cluster-config-file", `nodes-${port}.conf`,
          "--cluster-node-timeout", "5000",
          "--dir", dir,
          "--save", "",
          "--appendonly", "no",
        ],
        { stdio: "ignore" },
      );
      children.push(child);
      const spawned = once(child, "spawn");
      const failed = once(child, "error").then(([err]) => Promise.reject(new Error(`redis-server could not start (apt-get install -y redis-server): ${(err as Error).message}`)));
      await Promise.race([spawned, failed]);
      nodes.push({ host: "127.0.0.1", port });
    }
    for (const { port } of nodes) await until(`redis-server on ${port} did not answer`, deadline, async () => (await redisCli(port, "ping")).trim() === "PONG");
    await run("redis-cli", ["--cluster", "create", ...nodes.map((n) => `${n.host}:${n.port}`), "--cluster-replicas", "0", "--cluster-yes"], { timeout: START_TIMEOUT_MS });
    for (const { port } of nodes) {
      await until(`node ${port} did not reach cluster_state:ok`, deadline, async () => (await redisCli(port, "cluster", "info")).includes("cluster_state:ok"));
    }
    return { nodes, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { TEST_INTERNAL_KEY, TEST_JWT_SECRET, TEST_PEPPER, type TestService } from "./service.js";

export interface ChildService {
  baseUrl: string;
  grpcAddress: string;
  stop(): Promise<void>;
}

const MAIN = join(import.meta.dirname, "../../src/main.ts");

/**
 * A second server process (`node src/main.ts`) on the same database and Redis prefix as `svc`, for
 * tests that must hold across processes. It answers once its start-up log line names its ports.
 */
export async function startChildService(svc: TestService): Promise<ChildService> {
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    env: {
      ...process.env,
      DATABASE_URL: svc.config.databaseUrl!,
      REDIS_URL: svc.config.redisUrl!,
      REDIS_KEY_PREFIX: svc.config.redisKeyPrefix,
      API_KEY_PEPPER: TEST_PEPPER,
      JWT_SIGNING_SECRET: TEST_JWT_SECRET,
      API_KEY: TEST_INTERNAL_KEY,
      HOST: "127.0.0.1",
      PORT: "0",
      GRPC_PORT: "0",
      LOG_LEVEL: "info",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const ports = await new Promise<{ httpPort: number; grpcPort: number }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("child service did not start within 30 s")), 30_000);
    exited.then((code) => reject(new Error(`child service exited with ${code} before listening`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const entry = JSON.parse(line) as { httpPort?: number; grpcPort?: number };
      if (entry.httpPort && entry.grpcPort) {
        clearTimeout(timer);
        resolve({ httpPort: entry.httpPort, grpcPort: entry.grpcPort });
      }
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${ports.httpPort}`,
    grpcAddress: `127.0.0.1:${ports.grpcPort}`,
    async stop() {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "../..");

export interface ServerProcess {
  child: ChildProcess;
  baseUrl: string;
  /** host:port of its native gRPC door. */
  grpcAddress: string;
  /** Its JSON log lines so far. */
  logs: Array<{ level: number; msg: string }>;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/**
 * `node src/main.ts` as an operator starts it: configured by the environment alone (nothing
 * inherited but PATH), on free ports, answering once its start-up log line names them. `entry`
 * names another script that starts the service the same way (test/support/scheduler-child.ts);
 * `nodeArgs` go before it (a benchmark passes `npm start`'s node options).
 */
export async function spawnServer(env: Record<string, string>, entry = "src/main.ts", nodeArgs: string[] = []): Promise<ServerProcess> {
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", entry], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit").then(([code]) => code as number | null);
  const logs: ServerProcess["logs"] = [];
  const listening = new Promise<{ httpPort: number; grpcPort: number }>((resolve, reject) => {
    // Several processes starting under tsx on a loaded machine can take a while. One that does not
    // start is killed, or it would keep the test process alive (under WORKERS its service processes
    // exit once the supervisor is gone).
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("the server did not start within 60 s"));
    }, 60_000);
    exited.then((code) => reject(new Error(`the server exited with ${code} before listening`)));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const entry = JSON.parse(line);
      logs.push(entry);
      if (entry.httpPort) {
        clearTimeout(timer);
        resolve(entry);
      }
    });
  });
  const { httpPort, grpcPort } = await listening;
  return { child, baseUrl: `http://127.0.0.1:${httpPort}`, grpcAddress: `127.0.0.1:${grpcPort}`, logs, exited };
}

export interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run --silent cli -- <args>` with the given environment: its exit code, stdout and stderr. */
export function runCli(args: string[], env: Record<string, string>): Promise<Outcome> {
  return runToEnd("npm", ["run", "--silent", "cli", "--", ...args], env);
}

/** The service run to its end: a start-up that must fail, with the given environment. */
export function runFailingStart(env: Record<string, string>): Promise<Outcome> {
  return runToEnd(process.execPath, ["--import", "tsx", "src/main.ts"], { HOST: "127.0.0.1", PORT: "0", GRPC_PORT: "0", ...env });
}

async function runToEnd(command: string, args: string[], env: Record<string, string>): Promise<Outcome> {
  const child = spawn(command, args, { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c) => (stdout += c));
  child.stderr.on("data", (c) => (stderr += c));
  const [code] = await once(child, "close");
  return { code, stdout, stderr };
}

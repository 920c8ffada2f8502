import { pino, destination, stdTimeFunctions, type Logger } from "pino";

export type { Logger };

/** JSON lines; stdout for the server, stderr for the CLI (whose stdout is its JSON answer). */
export function createLogger(level: string, fd: 1 | 2 = 1): Logger {
  return pino({ level, base: undefined, timestamp: stdTimeFunctions.isoTime }, destination({ fd, sync: fd === 2 }));
}

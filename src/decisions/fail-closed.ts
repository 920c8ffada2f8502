import { AppError } from "../platform/errors.js";

/**
 * Caps and budgets cannot be honoured without their counters, so a dead Redis fails the decision
 * closed and fast: 503 COUNTERS_UNAVAILABLE, never a silent overshoot and never a hang. Every
 * Redis-backed counter store is wrapped by this one function, so they all fail the same way.
 *
 * The answer's message is stable: Redis's own text names hosts, ports and Lua source, which are
 * the operator's business, not the caller's. The failure rides along as the error's `cause`, which
 * the door logs with the request id (transport/error-mapping.ts).
 */
export function failClosed<T extends object>(store: T): T {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(store)) {
    wrapped[name] = (...args: unknown[]) =>
      (fn as (...a: unknown[]) => Promise<unknown>)(...args).catch((err) => {
        throw new AppError({ code: "UNAVAILABLE", reason: "COUNTERS_UNAVAILABLE", message: "Counters are temporarily unavailable; try again shortly", cause: err });
      });
  }
  return wrapped as T;
}

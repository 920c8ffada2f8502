import { unavailable } from "../platform/errors.js";

/**
 * Caps and budgets cannot be honoured without their counters, so a dead Redis fails the decision
 * closed and fast: 503 COUNTERS_UNAVAILABLE, never a silent overshoot and never a hang. Every
 * Redis-backed counter store is wrapped by this one function, so they all fail the same way.
 */
export function failClosed<T extends object>(store: T): T {
  const wrapped = {} as Record<string, unknown>;
  for (const [name, fn] of Object.entries(store)) {
    wrapped[name] = (...args: unknown[]) =>
      (fn as (...a: unknown[]) => Promise<unknown>)(...args).catch((err) => {
        throw unavailable("COUNTERS_UNAVAILABLE", `Counters are unavailable (Redis: ${(err as Error).message})`);
      });
  }
  return wrapped as T;
}

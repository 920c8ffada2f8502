/**
 * Instants as plain data. The core never reads the clock: every "now" arrives in the input, so a
 * decision replays identically. Instants are ISO 8601 strings or epoch milliseconds.
 */

export const MS_PER_DAY = 86_400_000;

/** Epoch milliseconds of an ISO string or epoch-ms number; null when it is neither. */
export function parseInstant(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "string" || value.trim() === "") return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}

/** Like parseInstant, for values the caller has already validated; a bad value is a programming error. */
export function requireInstant(value: unknown, what: string): number {
  const ms = parseInstant(value);
  if (ms === null) throw new Error(`${what}: not an ISO 8601 instant: ${String(value)}`);
  return ms;
}

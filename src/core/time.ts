/**
 * Instants as plain data. The core never reads the clock: every "now" arrives in the input, so a
 * decision replays identically. Instants are ISO 8601 strings or epoch milliseconds.
 */

export const MS_PER_DAY = 86_400_000;

/** ISO 8601 extended format: a date, optionally a time of day (minutes at least), optionally a zone. */
const ISO_8601 = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2})(:\d{2}(?:[.,]\d+)?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/**
 * An ISO 8601 instant in the form RFC 3339 requires (seconds and a zone, as protobuf's Timestamp
 * and Date.parse take it), or null when `value` is not ISO 8601's extended format. Without a zone
 * the time is UTC: `2025-01-01T10:00` is `2025-01-01T10:00:00Z` (Date.parse would read it in the
 * server's zone). A date alone is its first instant, or with `endOfDay` its last one, so that an
 * inclusive range ending on a date covers that whole day. Out-of-range fields (month 13) pass
 * through for the parser to refuse.
 */
export function isoToRfc3339(value: string, endOfDay = false): string | null {
  const m = ISO_8601.exec(value);
  if (!m) return null;
  const [, date, hhmm, seconds, zone] = m;
  if (!hhmm) return `${date}T${endOfDay ? "23:59:59.999999999" : "00:00:00"}Z`;
  const offset = !zone || zone === "Z" ? "Z" : zone.length === 3 ? `${zone}:00` : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  return `${date}T${hhmm}${(seconds ?? ":00").replace(",", ".")}${offset}`;
}

/** Epoch milliseconds of an ISO string (zone-less is UTC, see isoToRfc3339) or epoch-ms number; null when it is neither. */
export function parseInstant(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "string" || value.trim() === "") return null;
  const ms = Date.parse(isoToRfc3339(value) ?? value);
  return Number.isNaN(ms) ? null : ms;
}

/** Like parseInstant, for values the caller has already validated; a bad value is a programming error. */
export function requireInstant(value: unknown, what: string): number {
  const ms = parseInstant(value);
  if (ms === null) throw new Error(`${what}: not an ISO 8601 instant: ${String(value)}`);
  return ms;
}

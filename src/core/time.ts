/**
 * Instants as plain data. The core never reads the clock: every "now" arrives in the input, so a
 * decision replays identically. Instants are ISO 8601 strings or epoch milliseconds.
 */

export const MS_PER_DAY = 86_400_000;

/** ISO 8601 extended format: a date, optionally a time of day (minutes at least), optionally a zone. */
const ISO_8601 = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2})(:\d{2}(?:[.,]\d+)?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** The `YYYY-MM-DD` a date or timestamp text starts with. */
const LEADING_DATE = /^(\d{4})-(\d{2})-(\d{2})/;

/**
 * Whether the text starts with a `YYYY-MM-DD` date that is on the (proleptic Gregorian) calendar:
 * month 1-12, day 1 to the month's length, February 29 only in leap years. Every reader of
 * request timestamps asks this before Date.parse or protobuf's Timestamp reader (which uses
 * Date.parse), because V8 rolls a day up to 31 over into the next month (`2030-02-30` is read as
 * March 2) instead of refusing it. Text that does not start with such a date is not on the calendar.
 */
export function isCalendarDate(text: string): boolean {
  const m = LEADING_DATE.exec(text);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const length = month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return day <= length;
}

/**
 * An ISO 8601 instant in the form RFC 3339 requires (seconds and a zone, as protobuf's Timestamp
 * and Date.parse take it), or null when `value` is not ISO 8601's extended format or names a day
 * that is not on the calendar (isCalendarDate). Without a zone the time is UTC: `2025-01-01T10:00`
 * is `2025-01-01T10:00:00Z` (Date.parse would read it in the server's zone). A date alone is its
 * first instant, or with `endOfDay` its last one, so that an inclusive range ending on a date
 * covers that whole day. An out-of-range time of day (`23:59:60`, `25:00`) passes through for the
 * parser to refuse.
 */
export function isoToRfc3339(value: string, endOfDay = false): string | null {
  const m = ISO_8601.exec(value);
  if (!m || !isCalendarDate(value)) return null;
  const [, date, hhmm, seconds, zone] = m;
  if (!hhmm) return `${date}T${endOfDay ? "23:59:59.999999999" : "00:00:00"}Z`;
  const offset = !zone || zone === "Z" ? "Z" : zone.length === 3 ? `${zone}:00` : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  return `${date}T${hhmm}${(seconds ?? ":00").replace(",", ".")}${offset}`;
}

/**
 * Epoch milliseconds of an ISO string (zone-less is UTC, see isoToRfc3339) or epoch-ms number; null
 * when it is neither. Text that starts with a date not on the calendar is null whatever follows it.
 */
export function parseInstant(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  if (typeof value !== "string" || value.trim() === "") return null;
  const iso = isoToRfc3339(value);
  // isoToRfc3339 has checked the calendar of what it converts; other text reaches Date.parse as it is.
  if (iso === null && LEADING_DATE.test(value) && !isCalendarDate(value)) return null;
  const ms = Date.parse(iso ?? value);
  return Number.isNaN(ms) ? null : ms;
}

/** Like parseInstant, for values the caller has already validated; a bad value is a programming error. */
export function requireInstant(value: unknown, what: string): number {
  const ms = parseInstant(value);
  if (ms === null) throw new Error(`${what}: not an ISO 8601 instant: ${String(value)}`);
  return ms;
}

import { isCalendarDate } from "../core/time.js";
import { invalidField } from "../platform/errors.js";

/**
 * The period a report covers and the zone whose midnights bound its days. Pure: the data sources
 * bind `from` and `to` as instants, and group by day in the same zone inside PostgreSQL.
 */
export interface ReportPeriod {
  from: Date;
  to: Date;
  timeZone: string;
}

/** At most a year and a day: a period's query walks indexed time ranges, and a chart stays legible. */
export const MAX_PERIOD_DAYS = 366;
export const DEFAULT_PERIOD_DAYS = 7;

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
/** An instant needs its offset: a wall-clock time without one would mean different instants to different readers. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

/** The zone's offset from UTC at `instant`, in milliseconds. */
function offsetMs(instant: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
  }).formatToParts(new Date(instant));
  const n = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return Date.UTC(n("year"), n("month") - 1, n("day"), n("hour"), n("minute"), n("second")) - Math.floor(instant / 1000) * 1000;
}

/** The instant of local midnight that starts the day y-m-d in the zone (DST-safe: midnight is never skipped in IANA zones we know of, and when it is, the first instant of the day). */
export function startOfLocalDay(y: number, m: number, d: number, timeZone: string): Date {
  const wall = Date.UTC(y, m - 1, d);
  let t = wall - offsetMs(wall, timeZone);
  t = wall - offsetMs(t, timeZone);
  return new Date(t);
}

/** The local calendar date of `instant` in the zone. */
export function localDate(instant: Date, timeZone: string): { y: number; m: number; d: number } {
  const [y, m, d] = new Intl.DateTimeFormat("en-CA", { timeZone, year: "numeric", month: "2-digit", day: "2-digit" }).format(instant).split("-").map(Number);
  return { y, m, d };
}

function addDays(date: { y: number; m: number; d: number }, days: number): { y: number; m: number; d: number } {
  const t = new Date(Date.UTC(date.y, date.m - 1, date.d + days));
  return { y: t.getUTCFullYear(), m: t.getUTCMonth() + 1, d: t.getUTCDate() };
}

/** A `from` or `to` value: a date (a local day in the zone) or an instant with its offset. Throws a 400 naming `field`. */
export function parsePeriodBound(value: string, field: string): { kind: "date"; y: number; m: number; d: number } | { kind: "instant"; at: Date } {
  const date = DATE_ONLY.exec(value);
  if (date) {
    const [y, m, d] = [Number(date[1]), Number(date[2]), Number(date[3])];
    // Date.UTC, which the period's arithmetic uses, reads years 0-99 as 1900-1999.
    if (isCalendarDate(value) && y >= 100) return { kind: "date", y, m, d };
  } else if (INSTANT.test(value) && isCalendarDate(value) && !Number.isNaN(Date.parse(value))) {
    return { kind: "instant", at: new Date(value) };
  }
  throw invalidField(field, "must be an ISO 8601 date (2026-03-01) or a timestamp with its offset (2026-03-01T00:00:00Z)");
}

export interface PeriodInput {
  from?: string;
  to?: string;
  days?: number;
  timezone: string;
}

/**
 * `from`/`to` (a date `to` includes that whole day; an instant `to` is exclusive), or `days`: the
 * last `days` whole local days before today. `field` prefixes the names in 400s, e.g.
 * `dataSources[0].params`.
 */
export function resolvePeriod(input: PeriodInput, now: Date, field: string): ReportPeriod {
  const tz = input.timezone;
  if ((input.from === undefined) !== (input.to === undefined)) {
    throw invalidField(`${field}.${input.from === undefined ? "from" : "to"}`, "from and to are given together");
  }
  let from: Date;
  let to: Date;
  if (input.from !== undefined && input.to !== undefined) {
    if (input.days !== undefined) throw invalidField(`${field}.days`, "cannot be combined with from and to");
    const f = parsePeriodBound(input.from, `${field}.from`);
    const t = parsePeriodBound(input.to, `${field}.to`);
    from = f.kind === "date" ? startOfLocalDay(f.y, f.m, f.d, tz) : f.at;
    to = t.kind === "date" ? (({ y, m, d }) => startOfLocalDay(y, m, d, tz))(addDays(t, 1)) : t.at;
    if (to.getTime() <= from.getTime()) throw invalidField(`${field}.to`, "must be after from");
    if (to.getTime() - from.getTime() > (MAX_PERIOD_DAYS + 1) * 86_400_000) throw invalidField(`${field}.to`, `the period may span at most ${MAX_PERIOD_DAYS} days`);
  } else {
    const days = input.days ?? DEFAULT_PERIOD_DAYS;
    const today = localDate(now, tz);
    const start = addDays(today, -days);
    from = startOfLocalDay(start.y, start.m, start.d, tz);
    to = startOfLocalDay(today.y, today.m, today.d, tz);
  }
  return { from, to, timeZone: tz };
}

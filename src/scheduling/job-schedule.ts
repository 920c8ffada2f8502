import { Cron } from "croner";
import { AppError, invalidField } from "../platform/errors.js";
import type { JobSchedule } from "./scheduled-job.js";

/**
 * Five fields (minute precision) or six (a leading seconds field), as Vixie cron and most
 * schedulers read them, plus nicknames such as `@daily`. Croner is the one reader of expressions
 * here: validation, the local driver and BullMQ's repeat strategy all use it, so an expression
 * that passed validation is run exactly as validated.
 */
const CRON_MODE = "5-or-6-parts";

function unprocessable(reason: "INVALID_CRON_EXPRESSION" | "INVALID_TIMEZONE", field: string, message: string): AppError {
  return new AppError({
    code: "INVALID_ARGUMENT",
    reason,
    message: `${field}: ${message}`,
    details: { fields: [{ field, message }] },
  });
}

/** An IANA zone name such as `Europe/Berlin` or `UTC`; offsets like `+05:00` are not zones. */
export function isIanaTimeZone(name: string): boolean {
  if (!name || /^[+-]/.test(name)) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

function cronOf(expression: string, timezone: string): Cron {
  return new Cron(expression, { timezone, mode: CRON_MODE, paused: true });
}

/**
 * Checks a schedule where users or domains supply one. Spec 7: an invalid cron expression is 422
 * (reason INVALID_CRON_EXPRESSION); an unknown time zone is an invalid field like any other, 400
 * (reason INVALID_TIMEZONE). The message names the field, `<field>.cron` or `<field>.timezone`. An
 * expression that can never fire (`0 0 30 2 *`) is invalid too. An interval must be a whole number
 * of milliseconds, at least one second.
 */
export function validateSchedule(
  schedule: JobSchedule,
  field = "schedule",
  names: { cron: string; timezone: string } = { cron: `${field}.cron`, timezone: `${field}.timezone` },
): void {
  if ("everyMs" in schedule) {
    if (!Number.isInteger(schedule.everyMs) || schedule.everyMs < 1000) {
      throw invalidField(`${field}.everyMs`, "must be a whole number of milliseconds, at least 1000");
    }
    return;
  }
  try {
    cronOf(schedule.cron, "UTC");
  } catch (err) {
    throw unprocessable("INVALID_CRON_EXPRESSION", names.cron, `invalid cron expression "${schedule.cron}": ${(err as Error).message.replace(/^CronPattern: /, "")}`);
  }
  if (!isIanaTimeZone(schedule.timezone)) {
    throw unprocessable("INVALID_TIMEZONE", names.timezone, `unknown IANA time zone "${schedule.timezone}"`);
  }
  if (cronOf(schedule.cron, schedule.timezone).nextRun() === null) {
    throw unprocessable("INVALID_CRON_EXPRESSION", names.cron, `cron expression "${schedule.cron}" never fires`);
  }
}

/** The first slot strictly after `after` (null when a cron expression fires no more). */
export function nextSlot(schedule: JobSchedule, after: Date): Date | null {
  if ("everyMs" in schedule) return new Date((Math.floor(after.getTime() / schedule.everyMs) + 1) * schedule.everyMs);
  return cronOf(schedule.cron, schedule.timezone).nextRun(after);
}

/**
 * The latest slot at or before `at`: the one a cron route runs on demand (for a job whose
 * `routeCall` is `current-slot`), so that a route and the scheduler that fire for the same moment
 * claim the same (job, slot) and it runs once.
 */
export function currentSlot(schedule: JobSchedule, at: Date): Date | null {
  if ("everyMs" in schedule) return new Date(Math.floor(at.getTime() / schedule.everyMs) * schedule.everyMs);
  // previousRuns excludes its reference; one millisecond later includes a slot that starts at `at`.
  return cronOf(schedule.cron, schedule.timezone).previousRuns(1, new Date(at.getTime() + 1))[0] ?? null;
}

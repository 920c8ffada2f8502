/**
 * Offer schedules (catalog.ts OfferSchedule) against the request's `now`. All calendar fields are
 * UTC: a tenant time zone would need a zone database the pure core does not carry.
 */
import type { OfferSchedule } from "./catalog.js";
import { parseInstant } from "./time.js";

/** Why the schedule excludes `nowMs`, or null when the offer is in schedule. */
export function scheduleViolation(schedule: OfferSchedule | undefined, nowMs: number): string | null {
  if (!schedule) return null;
  const start = parseInstant(schedule.startAt);
  if (start !== null && nowMs < start) return `schedule starts at ${schedule.startAt}`;
  const end = parseInstant(schedule.endAt);
  if (end !== null && nowMs >= end) return `schedule ended at ${schedule.endAt}`;
  const now = new Date(nowMs);
  if (schedule.daysOfWeek && schedule.daysOfWeek.length > 0 && !schedule.daysOfWeek.includes(now.getUTCDay())) {
    return `not scheduled on UTC weekday ${now.getUTCDay()}`;
  }
  if (schedule.hours && !inHourWindow(now.getUTCHours() + now.getUTCMinutes() / 60, schedule.hours)) {
    return `outside UTC hours ${schedule.hours.from}-${schedule.hours.to}`;
  }
  return null;
}

function inHourWindow(hour: number, window: { from: number; to: number }): boolean {
  if (window.from === window.to) return true;
  return window.from < window.to ? hour >= window.from && hour < window.to : hour >= window.from || hour < window.to;
}

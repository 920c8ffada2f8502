import { invalidField, type FieldViolation } from "./errors.js";
import { isUuid } from "./ids.js";

export interface CursorPageRequest {
  limit: number;
  /** The last id of the previous page; rows come newest first, so the next page is `id < cursor`. */
  cursor: string | null;
}

/**
 * The page size used for a requested `limit`. Spec 8 gives each list a default and a maximum, and
 * 2.1's `pagination.limit` is "page size used": a limit over the maximum is served at the maximum
 * (and says so there), as most list APIs do; a limit under 1 or not whole is a 400 naming it.
 */
function pageLimit(requested: number | undefined, max: number, fallback: number): number | null {
  const limit = requested ?? fallback;
  if (!Number.isInteger(limit) || limit < 1) return null;
  return Math.min(limit, max);
}

const LIMIT_RULE = "must be a whole number of at least 1";

/** pageLimit, or a 400 naming `limit`. */
export function pageSize(requested: number | undefined, max: number, fallback: number): number {
  const limit = pageLimit(requested, max, fallback);
  if (limit === null) throw invalidField("limit", LIMIT_RULE);
  return limit;
}

/** Spec 8: list pages default to 50 and allow at most 100 (more is served as 100). */
export function cursorPageRequest(req: { limit?: number; cursor: string }, max = 100, fallback = 50): CursorPageRequest {
  const limit = pageSize(req.limit, max, fallback);
  if (req.cursor && !isUuid(req.cursor)) throw invalidField("cursor", "is not a cursor returned by this list");
  return { limit, cursor: req.cursor || null };
}

/** The spec 2.1 envelope from a page fetched with limit + 1 rows (the extra row says whether more exist). */
export function cursorPage<T extends { id: string }>(rows: T[], limit: number): { rows: T[]; pagination: { limit: number; cursor?: string; hasMore: boolean } } {
  const hasMore = rows.length > limit;
  const page = hasMore ? rows.slice(0, limit) : rows;
  return { rows: page, pagination: { limit, cursor: hasMore ? page[page.length - 1].id : undefined, hasMore } };
}

export interface OffsetPageRequest {
  page: number;
  limit: number;
  offset: number;
}

/** Page/limit lists (audit logs, change history): page from 1, limit as pageLimit gives it; 400 naming the field. */
export function offsetPageRequest(req: { page?: number; limit?: number }, max: number, fallback = 50): OffsetPageRequest {
  const page = req.page ?? 1;
  if (!Number.isInteger(page) || page < 1) throw invalidField("page", "must be a whole number of at least 1");
  const limit = pageSize(req.limit, max, fallback);
  return { page, limit, offset: (page - 1) * limit };
}

/**
 * Limit/offset lists (audit export, decision traces): limit as pageLimit gives it, offset from 0.
 * Problems go to `violations`, so that they are reported with the request's other field errors.
 */
export function limitOffsetRequest(
  req: { limit?: number; offset?: number },
  max: number,
  fallback: number,
  violations: FieldViolation[],
): { limit: number; offset: number } {
  const limit = pageLimit(req.limit, max, fallback);
  const offset = req.offset ?? 0;
  if (limit === null) violations.push({ field: "limit", message: LIMIT_RULE });
  if (!Number.isInteger(offset) || offset < 0) violations.push({ field: "offset", message: "must be a whole number of at least 0" });
  return { limit: limit ?? fallback, offset };
}

import { status as GrpcStatus } from "@grpc/grpc-js";
import { Code } from "@connectrpc/connect";
import { AppError, isAppError, type ErrorCode } from "../platform/errors.js";
import { isTransientConflict, isUnstorableValue, transientConflictError, unstorableValueError } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import type { ErrorFormatName } from "../platform/method-policy.js";
import type { RateLimitDecision } from "../platform/rate-limiter.js";
import { rateLimitOfFailure } from "../platform/rate-limit-policy.js";

/**
 * Every failure becomes an AppError; anything unexpected is logged with its cause and never leaked.
 * An AppError that carries a cause answers with its own stable message and hides a failure
 * underneath (Redis down, for one), which is logged here, with the request id, for the operator.
 */
export function toAppError(err: unknown, logger: Logger, requestId?: string): AppError {
  if (isAppError(err)) {
    if (err.code === "INTERNAL") logger.error({ err, requestId }, "internal error");
    else if (err.cause !== undefined) logger.warn({ err, requestId }, "request failed on a dependency");
    return err;
  }
  // A deadlock or serialization failure that escaped a retrying transaction: the caller may retry (503).
  if (isTransientConflict(err)) return toAppError(transientConflictError(err), logger, requestId);
  // A value PostgreSQL refused that the request screen let through: the caller's 400, logged to close the gap.
  if (isUnstorableValue(err)) return toAppError(unstorableValueError(err), logger, requestId);
  logger.error({ err, requestId }, "unexpected error");
  return new AppError({ code: "INTERNAL", reason: "INTERNAL", message: "Internal server error" });
}

export const GRPC_CODES: Record<ErrorCode, GrpcStatus> = {
  INVALID_ARGUMENT: GrpcStatus.INVALID_ARGUMENT,
  UNAUTHENTICATED: GrpcStatus.UNAUTHENTICATED,
  PERMISSION_DENIED: GrpcStatus.PERMISSION_DENIED,
  NOT_FOUND: GrpcStatus.NOT_FOUND,
  ALREADY_EXISTS: GrpcStatus.ALREADY_EXISTS,
  FAILED_PRECONDITION: GrpcStatus.FAILED_PRECONDITION,
  RESOURCE_EXHAUSTED: GrpcStatus.RESOURCE_EXHAUSTED,
  UNIMPLEMENTED: GrpcStatus.UNIMPLEMENTED,
  UNAVAILABLE: GrpcStatus.UNAVAILABLE,
  INTERNAL: GrpcStatus.INTERNAL,
};

export const CONNECT_CODES: Record<ErrorCode, Code> = {
  INVALID_ARGUMENT: Code.InvalidArgument,
  UNAUTHENTICATED: Code.Unauthenticated,
  PERMISSION_DENIED: Code.PermissionDenied,
  NOT_FOUND: Code.NotFound,
  ALREADY_EXISTS: Code.AlreadyExists,
  FAILED_PRECONDITION: Code.FailedPrecondition,
  RESOURCE_EXHAUSTED: Code.ResourceExhausted,
  UNIMPLEMENTED: Code.Unimplemented,
  UNAVAILABLE: Code.Unavailable,
  INTERNAL: Code.Internal,
};

const HTTP_BY_CODE: Record<ErrorCode, number> = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  FAILED_PRECONDITION: 400,
  RESOURCE_EXHAUSTED: 429,
  UNIMPLEMENTED: 501,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

/** The HTTP-only statuses of spec 7 come from reasons, in this one table. */
const HTTP_BY_REASON: Record<string, number> = {
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  METHOD_NOT_ALLOWED: 405,
  INVALID_CRON_EXPRESSION: 422,
  RATE_LIMITED: 429,
  CONFLICT: 409,
  // FAILED_PRECONDITION on gRPC and Connect; spec 3.3 answers the model registry's guard with 409.
  ROLLBACK_GUARD: 409,
  // Approvals (docs/approvals.md): the request cannot move, or its change no longer applies.
  APPROVAL_RESOLVED: 409,
  APPROVAL_EXPIRED: 409,
  APPROVAL_NOT_APPLICABLE: 409,
  PUBLISH_APPROVAL_REQUIRED: 409,
};

export function httpStatusOf(err: AppError): number {
  return HTTP_BY_REASON[err.reason] ?? HTTP_BY_CODE[err.code];
}

/**
 * The HTTP status a failure is answered with, as toAppError classifies it, without logging: what
 * the request metrics count on every door.
 */
export function statusOfFailure(err: unknown): number {
  if (isAppError(err)) return httpStatusOf(err);
  if (isTransientConflict(err)) return httpStatusOf(transientConflictError(err));
  return 500;
}

/** `error.code` of the structured shape: the HTTP status as a constant name (documented in docs/errors.md). */
export const HTTP_CODE_NAMES: Record<number, string> = {
  400: "BAD_REQUEST",
  401: "UNAUTHORIZED",
  403: "FORBIDDEN",
  404: "NOT_FOUND",
  405: "METHOD_NOT_ALLOWED",
  409: "CONFLICT",
  413: "PAYLOAD_TOO_LARGE",
  415: "UNSUPPORTED_MEDIA_TYPE",
  422: "UNPROCESSABLE_ENTITY",
  429: "TOO_MANY_REQUESTS",
  500: "INTERNAL_ERROR",
  501: "NOT_IMPLEMENTED",
  503: "SERVICE_UNAVAILABLE",
};

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Payload Too Large",
  415: "Unsupported Media Type",
  422: "Unprocessable Entity",
  429: "Too Many Requests",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

const OAUTH_ERRORS: Record<string, string> = {
  INVALID_REQUEST: "invalid_request",
  UNSUPPORTED_GRANT_TYPE: "unsupported_grant_type",
  INVALID_CLIENT: "invalid_client",
  RATE_LIMITED: "rate_limit_exceeded",
  RATE_LIMITER_UNAVAILABLE: "temporarily_unavailable",
};

export interface HttpErrorResponse {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** The rate-limit headers of spec 7 on an allowed call (HTTP headers, or gRPC metadata). */
export function rateLimitHeaders(decision: RateLimitDecision | null): Record<string, string> {
  if (!decision) return {};
  return { "x-ratelimit-limit": String(decision.limit), "x-ratelimit-remaining": String(decision.remaining) };
}

/**
 * What every door attaches to an error besides its body (HTTP headers, Connect or gRPC metadata):
 * the stable reason, so clients of any door can branch on the same value, the request id, and
 * the rate-limit headers of spec 7 when the error tells the caller to wait.
 */
export function errorHeaders(err: AppError, requestId: string): Record<string, string> {
  const headers: Record<string, string> = { "x-error-reason": err.reason };
  if (requestId) headers["x-request-id"] = requestId;
  // The rules a refusal names (the rollback guard's), for clients of doors whose body has no room for them.
  if (Array.isArray(err.details.rules)) headers["x-error-rules"] = err.details.rules.join(",");
  const retryAfter = err.details.retryAfterSeconds;
  if (typeof retryAfter === "number") headers["retry-after"] = String(retryAfter);
  if (err.reason === "RATE_LIMITED") {
    headers["x-ratelimit-limit"] = String(err.details.limit);
    headers["x-ratelimit-remaining"] = "0";
  } else Object.assign(headers, rateLimitHeaders(rateLimitOfFailure(err)));
  return headers;
}

/** Spec 7's four body shapes: OAuth on the token endpoint, the rate-limit shape on every other 429, then by plane. */
export function httpErrorResponse(err: AppError, format: ErrorFormatName, requestId: string): HttpErrorResponse {
  const status = httpStatusOf(err);
  const headers = errorHeaders(err, requestId);
  const retryAfter = err.details.retryAfterSeconds;
  if (format === "oauth") {
    const error = OAUTH_ERRORS[err.reason] ?? (status >= 500 ? "server_error" : "invalid_request");
    // retryAfter also in the body on the token endpoint's 429, like the rate-limit shape elsewhere.
    return { status, headers, body: { error, error_description: err.message, ...(status === 429 ? { retryAfter } : {}) } };
  }
  if (status === 429) {
    return { status, headers, body: { error: "Too Many Requests", retryAfter, message: err.message } };
  }
  if (format === "structured") {
    return {
      status,
      headers,
      body: {
        error: {
          code: HTTP_CODE_NAMES[status] ?? "ERROR",
          reason: err.reason,
          message: err.message,
          status,
          recommendationId: (err.details.recommendationId as string | undefined) ?? null,
          timestamp: new Date().toISOString(),
          requestId,
        },
      },
    };
  }
  const body: Record<string, unknown> = { title: TITLES[status] ?? "Error", detail: err.message, status, reason: err.reason, requestId };
  if (Array.isArray(err.details.fields)) body.errors = err.details.fields;
  if (Array.isArray(err.details.rules)) body.rules = err.details.rules;
  return { status, headers, body };
}

/**
 * The one error type of the service. Every door maps it: gRPC status, Connect error,
 * and the spec's HTTP statuses and JSON shapes (see transport/error-mapping.ts).
 * `code` is a gRPC status name; `reason` is a stable UPPER_SNAKE identifier clients may branch on.
 */
export type ErrorCode =
  | "INVALID_ARGUMENT"
  | "UNAUTHENTICATED"
  | "PERMISSION_DENIED"
  | "NOT_FOUND"
  | "ALREADY_EXISTS"
  | "FAILED_PRECONDITION"
  | "RESOURCE_EXHAUSTED"
  | "UNIMPLEMENTED"
  | "UNAVAILABLE"
  | "INTERNAL";

export interface AppErrorInit {
  code: ErrorCode;
  reason: string;
  message: string;
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly reason: string;
  readonly details: Record<string, unknown>;

  constructor(init: AppErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = "AppError";
    this.code = init.code;
    this.reason = init.reason;
    this.details = init.details ?? {};
  }
}

/** Shape test instead of instanceof, which breaks across worker threads and module copies. */
export function isAppError(err: unknown): err is AppError {
  return (
    typeof err === "object" &&
    err !== null &&
    (err as { name?: unknown }).name === "AppError" &&
    typeof (err as { code?: unknown }).code === "string" &&
    typeof (err as { reason?: unknown }).reason === "string"
  );
}

/** One invalid field: messages read `<field>: <message>` as spec 7 asks. */
export interface FieldViolation {
  field: string;
  message: string;
}

export function invalidFields(violations: FieldViolation[]): AppError {
  return new AppError({
    code: "INVALID_ARGUMENT",
    reason: "VALIDATION_FAILED",
    message: violations.map((v) => `${v.field}: ${v.message}`).join("; "),
    details: { fields: violations },
  });
}

export function invalidField(field: string, message: string): AppError {
  return invalidFields([{ field, message }]);
}

export function badRequest(reason: string, message: string, details?: Record<string, unknown>): AppError {
  return new AppError({ code: "INVALID_ARGUMENT", reason, message, details });
}

export function notFound(what: string, id: string): AppError {
  return new AppError({ code: "NOT_FOUND", reason: "NOT_FOUND", message: `${what} not found: ${id}` });
}

export function conflict(reason: string, message: string): AppError {
  return new AppError({ code: "ALREADY_EXISTS", reason, message });
}

export function unauthenticated(message: string, reason = "UNAUTHENTICATED"): AppError {
  return new AppError({ code: "UNAUTHENTICATED", reason, message });
}

export function forbidden(message: string, reason = "FORBIDDEN"): AppError {
  return new AppError({ code: "PERMISSION_DENIED", reason, message });
}

export function unavailable(reason: string, message: string): AppError {
  return new AppError({ code: "UNAVAILABLE", reason, message });
}

/**
 * What never reaches a log line: credentials in headers and bodies, and the values a failed query
 * was run with. Sequelize and pg errors carry the statement, its bind parameters (customer
 * attributes, snapshots, key hashes) and messages and details that quote the offending value
 * (`invalid input syntax for type uuid: "…"`, `Key (name)=(…) already exists`, `Failing row
 * contains (…)`), so a database error is logged by an allow-list: its SQLSTATE and the names of
 * what it concerns, with quoted text in its message masked, and its stack frames.
 */

export const REDACTED = "[redacted]";

const CREDENTIAL_KEYS = ["apiKey", "clientSecret", "client_secret", "oidcClientSecret", "accessToken", "access_token", "password", "secret", "token"];
const HEADER_KEYS = ["authorization", '["x-api-key"]', "cookie", '["set-cookie"]'];
const QUERY_KEYS = ["sql", "parameters"];

/** pino `redact` paths: a second line of defence behind the error serializer, and for headers and bodies. */
export const REDACT_PATHS = [
  ...CREDENTIAL_KEYS,
  ...CREDENTIAL_KEYS.map((k) => `*.${k}`),
  ...["headers", "req.headers", "request.headers"].flatMap((h) => HEADER_KEYS.map((k) => (k.startsWith("[") ? `${h}${k}` : `${h}.${k}`))),
  ...["err", "err.original", "err.parent", "err.cause", "err.cause.original", "err.cause.parent"].flatMap((e) => QUERY_KEYS.map((k) => `${e}.${k}`)),
  // ioredis errors carry the command and its arguments (keys and values).
  "err.command.args",
  "err.cause.command.args",
];

/** Fields of a PostgreSQL error that name things, never values. */
const DATABASE_FIELDS = ["code", "severity", "routine", "schema", "table", "column", "dataType", "constraint"] as const;
const MAX_CAUSES = 5;

type ErrorLike = Error & Record<string, unknown>;

function isErrorLike(value: unknown): value is ErrorLike {
  return typeof value === "object" && value !== null && typeof (value as Error).message === "string" && "stack" in value;
}

/** Any Sequelize error (they all hold the statement) or a pg error (a prepared statement's). */
function isDatabaseError(err: ErrorLike): boolean {
  return (typeof err.name === "string" && err.name.startsWith("Sequelize")) || (typeof err.severity === "string" && typeof err.code === "string");
}

/** Quoted text in a driver message is a value or a name; names are logged by field, values never. */
function maskQuoted(message: string): string {
  return message.replace(/"(?:[^"]|"")*"/g, `"${REDACTED}"`).replace(/'(?:[^']|'')*'/g, `'${REDACTED}'`);
}

/** The frames of a stack without its first line, which repeats the message. */
function framesOf(stack: unknown): string | undefined {
  if (typeof stack !== "string") return undefined;
  return stack.split("\n").filter((line) => /^\s+at /.test(line)).join("\n");
}

function databaseError(err: ErrorLike): Record<string, unknown> {
  const pg = (isErrorLike(err.original) ? err.original : isErrorLike(err.parent) ? err.parent : err) as ErrorLike;
  const out: Record<string, unknown> = { type: err.constructor?.name ?? "Error", name: err.name, message: maskQuoted(pg.message) };
  for (const field of DATABASE_FIELDS) if (typeof pg[field] === "string") out[field] = pg[field];
  out.stack = framesOf(err.stack);
  return out;
}

/**
 * pino's `err` serializer: the usual fields (type, message, stack, own enumerable properties such
 * as an AppError's reason and details) with causes as nested objects, each serialized by the same
 * rules, instead of pino's default of appending causes' messages and stacks to the outer ones.
 */
export function serializeError(err: unknown, depth = 0): unknown {
  if (!isErrorLike(err)) return err;
  if (isDatabaseError(err)) return databaseError(err);
  const out: Record<string, unknown> = { type: err.constructor?.name ?? "Error", message: err.message, stack: err.stack };
  for (const key of Object.keys(err)) if (!(key in out) && key !== "cause") out[key] = err[key];
  if (err.cause !== undefined) out.cause = depth < MAX_CAUSES ? serializeError(err.cause, depth + 1) : "[more causes]";
  return out;
}

import { pino, destination, stdTimeFunctions, type DestinationStream, type Logger } from "pino";
import { REDACTED, REDACT_PATHS, serializeError } from "./log-redaction.js";
import { activeTraceIds } from "./tracing.js";

export type { Logger };

/** A fresh object each time: pino merges the line's fields into it. */
function traceFields(): object {
  const ids = activeTraceIds();
  return ids ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
}

/**
 * JSON lines; stdout for the server, stderr for the CLI (whose stdout is its JSON answer), or a
 * stream of the caller's. Credentials and query values are redacted (log-redaction.ts).
 */
export function createLogger(level: string, output: 1 | 2 | DestinationStream = 1): Logger {
  return pino(
    {
      level,
      base: undefined,
      timestamp: stdTimeFunctions.isoTime,
      serializers: { err: serializeError },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      // A line logged inside a traced request names its trace (OpenTelemetry's log field names).
      mixin: traceFields,
    },
    typeof output === "number" ? destination({ fd: output, sync: output === 2 }) : output,
  );
}

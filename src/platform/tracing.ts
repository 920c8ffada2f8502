import { createRequire } from "node:module";
import {
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type TextMapGetter,
} from "@opentelemetry/api";
import type { StageRunner } from "../core/index.js";
import type { CallInfo } from "./context.js";

/**
 * OpenTelemetry traces (docs/observability.md). Off unless OTLP export is configured: then no SDK is
 * loaded, and every helper here runs its function directly, so that tracing off costs a flag test.
 */
let enabled = false;
const tracer = trace.getTracer("decisioning-service");

export interface Tracing {
  /** Exports what is queued, then stops. */
  shutdown(): Promise<void>;
}

/**
 * Starts the SDK when `endpoint` (config.otlpTracesEndpoint) is set. The SDK reads that endpoint and
 * the other standard variables from the environment itself (OTEL_EXPORTER_OTLP_ENDPOINT gets
 * `/v1/traces` appended, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as it is; protocol, headers,
 * sampler, propagators, resource attributes). Traces only: metrics are Prometheus's (METRICS_PORT),
 * and the logs go to stdout with the trace id in them.
 */
export async function startTracing(endpoint: string | null): Promise<Tracing | null> {
  if (!endpoint) return null;
  const [{ NodeSDK }, { PgInstrumentation }, { IORedisInstrumentation }] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@opentelemetry/instrumentation-pg"),
    import("@opentelemetry/instrumentation-ioredis"),
  ]);
  const sdk = new NodeSDK({
    serviceName: "decisioning-service",
    metricReaders: [],
    logRecordProcessors: [],
    // Only inside a request: pool upkeep, the bus's subscriber and the scheduler's polling would be noise.
    // No connect spans (the pool's), and Redis commands by name: their arguments are keys and
    // customer data, long (EVALSHA's) and not for a tracing backend.
    instrumentations: [
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new IORedisInstrumentation({ requireParentSpan: true, dbStatementSerializer: (command) => command }),
    ],
  });
  sdk.start();
  // The instrumentations hook require(); an ESM import of these CommonJS packages may not pass
  // through it. Requiring them once lets them patch the client prototypes in place, which every
  // importer shares, whichever loaded the package first.
  const require = createRequire(import.meta.url);
  require("pg");
  require("ioredis");
  enabled = true;
  return {
    async shutdown() {
      enabled = false;
      await sdk.shutdown();
    },
  };
}

const callGetter: TextMapGetter<CallInfo> = {
  get: (call, key) => call.header(key.toLowerCase()),
  keys: () => [],
};

/**
 * Runs one request of a door in a SERVER span named after its method, child of the caller's
 * `traceparent` (W3C trace context). A missing or malformed traceparent starts a new trace.
 */
export function inRequestSpan<T>(name: string, door: string, call: CallInfo, run: () => Promise<T>): Promise<T> {
  if (!enabled) return run();
  const parent = propagation.extract(ROOT_CONTEXT, call, callGetter);
  const [service, method] = name.split("/");
  const attributes: Attributes = { "rpc.system": door === "grpc" ? "grpc" : door === "connect" ? "connect_rpc" : "http", "rpc.service": service, "rpc.method": method, "decisioning.door": door };
  return tracer.startActiveSpan(name, { kind: SpanKind.SERVER, attributes }, parent, async (span) => {
    try {
      return await run();
    } finally {
      span.end();
    }
  });
}

/** What the gateway learnt of the request: its tenant and the HTTP status it is answered with (5xx marks the span an error). */
export function annotateRequest(status: number, tenantId: string | undefined): void {
  if (!enabled) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.setAttribute("http.response.status_code", status);
  if (tenantId) span.setAttribute("decisioning.tenant_id", tenantId);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Runs `run` in an INTERNAL child span of the active one; a promise is awaited before the span ends. */
export function inSpan<T>(name: string, run: (span: Span | null) => T, attributes?: Attributes): T {
  if (!enabled) return run(null);
  return tracer.startActiveSpan(name, { attributes }, (span) => {
    const fail = (err: unknown) => {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw err;
    };
    let result: T;
    try {
      result = run(span);
    } catch (err) {
      return fail(err);
    }
    if (result instanceof Promise) {
      return result.then((value) => {
        span.end();
        return value;
      }, fail) as T;
    }
    span.end();
    return result;
  });
}

/** The core's decision stages (qualification, contact policy, ranking) as child spans `decision.<stage>`. */
export const traceStage: StageRunner = (stage, run) => inSpan(`decision.${stage}`, run);

/** The active trace's id and span id, for log lines and decision traces; undefined when not tracing. */
export function activeTraceIds(): { traceId: string; spanId: string } | undefined {
  if (!enabled) return undefined;
  const context = trace.getActiveSpan()?.spanContext();
  return context && isSpanContextValid(context) ? { traceId: context.traceId, spanId: context.spanId } : undefined;
}

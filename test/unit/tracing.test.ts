import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError, loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/platform/logger.js";
import { activeTraceIds, inRequestSpan, inSpan, startTracing } from "../../src/platform/tracing.js";
import { startHttpReceiver } from "../support/outbound-receivers.js";

test("the standard variables decide whether tracing is on; a bad endpoint is one clear configuration error", () => {
  assert.equal(loadConfig({}).otlpTracesEndpoint, null);
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).otlpTracesEndpoint, "http://collector:4318");
  assert.equal(
    loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/v1/traces" }).otlpTracesEndpoint,
    "https://traces.example/v1/traces",
  );
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_SDK_DISABLED: "true" }).otlpTracesEndpoint, null);
  assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318", OTEL_TRACES_EXPORTER: "none" }).otlpTracesEndpoint, null);
  assert.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }), (e) => e instanceof ConfigError && /OTEL_EXPORTER_OTLP_ENDPOINT/.test(e.message));
});

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger("info", { write: (s: string) => void lines.push(JSON.parse(s)) });
  return { logger, lines };
}

const call = (headers: Record<string, string>) => ({ header: (name: string) => headers[name], remoteAddress: "127.0.0.1" });

test("tracing off (no endpoint): no SDK, functions run as they are, log lines carry no trace fields", async () => {
  assert.equal(await startTracing(null), null);
  const { logger, lines } = capture();
  const traceparent = `00-${"a".repeat(32)}-${"b".repeat(16)}-01`;
  const out = await inRequestSpan("s.Service/Method", "rest", call({ traceparent }), async () =>
    inSpan("child", (span) => {
      assert.equal(span, null);
      assert.equal(activeTraceIds(), undefined);
      logger.info("inside");
      return 42;
    }),
  );
  assert.equal(out, 42);
  assert.equal(lines[0].msg, "inside");
  assert.equal(lines[0].trace_id, undefined);
});

test("tracing on: a log line inside a request names its trace and span; outside, none", async () => {
  const receiver = await startHttpReceiver();
  receiver.routes.set("/v1/traces", { statuses: [200] });
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  process.env.OTEL_EXPORTER_OTLP_PROTOCOL = "http/json";
  const tracing = await startTracing(receiver.url);
  assert.ok(tracing);
  try {
    const { logger, lines } = capture();
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    let ids: ReturnType<typeof activeTraceIds>;
    await inRequestSpan("s.Service/Method", "rest", call({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }), async () => {
      ids = activeTraceIds();
      logger.info({ requestId: "r1" }, "inside");
    });
    logger.info("outside");
    assert.equal(ids!.traceId, traceId);
    assert.deepEqual([lines[0].msg, lines[0].trace_id, lines[0].span_id, lines[0].requestId], ["inside", traceId, ids!.spanId, "r1"]);
    assert.equal(lines[1].trace_id, undefined);
    // A failing child span is recorded and the error goes on to the caller.
    await assert.rejects(inSpan("failing", async () => Promise.reject(new Error("boom"))), /boom/);
  } finally {
    await tracing.shutdown();
    await receiver.close();
  }
  const names = receiver.received.flatMap((r) => JSON.parse(r.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans.map((s: any) => s.name))));
  assert.deepEqual(names.sort(), ["failing", "s.Service/Method"]);
});

import type { DescMethod } from "@bufbuild/protobuf";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Door, RequestObserver } from "../platform/request-observer.js";
import type { DbPoolState } from "../platform/db.js";

/** What the gauges read at scrape time: nothing on the request path pays for them. */
export interface MetricsSources {
  scoringPool?: { queueSize(): number; threads(): number; fallbacks(): number };
  traces?: { readonly queueLength: number; readonly droppedCount: number };
  dbPool?: () => DbPoolState | null;
}

interface RequestSeries {
  count: Counter.Internal;
  duration: Histogram.Internal<string>;
}

/** Seconds, as Prometheus names durations; from a cache hit to a slow import. */
const REQUEST_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const JOB_BUCKETS_S = [0.01, 0.1, 0.5, 1, 5, 15, 60, 300];

/** `decisioning.v1.DecisionService/Recommend`: the gRPC method name, the same on every door. */
function methodLabel(method: DescMethod): string {
  return `${method.parent.typeName}/${method.name}`;
}

/**
 * The Prometheus metrics of one service process (docs/observability.md), in a registry of its own
 * so that several services in one process (tests) do not share counters. Request series are
 * cached per door, method and status: observing a request is two map lookups and two increments.
 */
export class Metrics implements RequestObserver {
  readonly registry = new Registry();
  private readonly requests: Counter<"door" | "method" | "status">;
  private readonly requestDuration: Histogram<"door" | "method" | "status">;
  private readonly series: Record<Door, Map<DescMethod, Map<number, RequestSeries>>> = { rest: new Map(), connect: new Map(), grpc: new Map() };
  private readonly decisionsWithOffers: Counter.Internal;
  private readonly decisionsEmpty: Counter.Internal;
  private readonly degraded: Counter;
  private readonly redisErrors: Counter;
  private readonly schedulerRuns: Counter<"job" | "outcome">;
  private readonly schedulerDuration: Histogram<"job" | "outcome">;
  private sources: MetricsSources = {};

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new Counter({
      name: "decisioning_requests_total",
      help: "Method calls answered, by door (rest, connect, grpc), method and HTTP status",
      labelNames: ["door", "method", "status"],
      registers,
    });
    this.requestDuration = new Histogram({
      name: "decisioning_request_duration_seconds",
      help: "Time from the gateway taking a call to its answer, by door, method and HTTP status",
      labelNames: ["door", "method", "status"],
      buckets: REQUEST_BUCKETS_S,
      registers,
    });
    const decisions = new Counter({
      name: "decisioning_decisions_total",
      help: "Recommend decisions made, by result: offers (at least one offer returned) or empty",
      labelNames: ["result"],
      registers,
    });
    this.decisionsWithOffers = decisions.labels("offers");
    this.decisionsEmpty = decisions.labels("empty");
    this.degraded = new Counter({
      name: "decisioning_scoring_degraded_total",
      help: "Decisions whose scoring degraded (a model could not score and a fallback score was used)",
      registers,
    });
    this.redisErrors = new Counter({
      name: "decisioning_redis_errors_total",
      help: "Errors reported by the Redis connections (refused, lost, timed out)",
      registers,
    });
    this.schedulerRuns = new Counter({
      name: "decisioning_scheduler_runs_total",
      help: "Scheduled job runs in this process, by job and outcome",
      labelNames: ["job", "outcome"],
      registers,
    });
    this.schedulerDuration = new Histogram({
      name: "decisioning_scheduler_run_duration_seconds",
      help: "Scheduled job run time, by job and outcome",
      labelNames: ["job", "outcome"],
      buckets: JOB_BUCKETS_S,
      registers,
    });
    this.defineGauges(registers);
  }

  private defineGauges(registers: Registry[]): void {
    const sources = () => this.sources;
    const gauge = (name: string, help: string, read: () => number | undefined) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(read() ?? 0);
        },
      });
    gauge("decisioning_scoring_pool_queue_size", "Scoring tasks waiting for a worker thread", () => sources().scoringPool?.queueSize());
    gauge("decisioning_scoring_pool_threads", "Scoring worker threads running", () => sources().scoringPool?.threads());
    gauge("decisioning_trace_queue_length", "Decision traces waiting to be written", () => sources().traces?.queueLength);
    new Counter({
      name: "decisioning_traces_dropped_total",
      help: "Decision traces dropped because the queue was full or the write failed",
      registers,
      collect() {
        this.reset();
        this.inc(sources().traces?.droppedCount ?? 0);
      },
    });
    new Counter({
      name: "decisioning_scoring_pool_fallbacks_total",
      help: "Pooled scoring tasks scored inline because a worker failed or did not answer in time",
      registers,
      collect() {
        this.reset();
        this.inc(sources().scoringPool?.fallbacks() ?? 0);
      },
    });
    const pool = () => sources().dbPool?.() ?? undefined;
    gauge("decisioning_db_pool_size", "Database connections open (in use or idle)", () => pool()?.size);
    gauge("decisioning_db_pool_available", "Database connections open and idle", () => pool()?.available);
    gauge("decisioning_db_pool_waiting", "Callers waiting for a database connection", () => pool()?.waiting);
    gauge("decisioning_db_pool_max", "Most database connections the pool opens", () => pool()?.maxSize);
  }

  /** Attaches what the gauges read; called once the pools exist. */
  watch(sources: MetricsSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** Counts the error events of a Redis connection. */
  watchRedis(redis: { on(event: "error", listener: () => void): unknown }): void {
    redis.on("error", () => this.redisErrors.inc());
  }

  observe(door: Door, method: DescMethod, status: number, durationMs: number): void {
    let byStatus = this.series[door].get(method);
    if (!byStatus) this.series[door].set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (!s) {
      const labels = [door, methodLabel(method), String(status)];
      byStatus.set(status, (s = { count: this.requests.labels(...labels), duration: this.requestDuration.labels(...labels) }));
    }
    s.count.inc();
    s.duration.observe(durationMs / 1000);
  }

  /** One Recommend decision that was made and stored. */
  decided(offerCount: number, degradedScoring: boolean): void {
    (offerCount > 0 ? this.decisionsWithOffers : this.decisionsEmpty).inc();
    if (degradedScoring) this.degraded.inc();
  }

  /** The scheduler's onRun hook: `job` is the job's name, `outcome` e.g. ok, failed or skipped. */
  recordSchedulerRun(job: string, outcome: string, durationMs: number): void {
    this.schedulerRuns.labels(job, outcome).inc();
    this.schedulerDuration.labels(job, outcome).observe(durationMs / 1000);
  }

  /** The Prometheus text exposition. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

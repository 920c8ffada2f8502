import { promisify } from "node:util";
import { gzip } from "node:zlib";
import type { SnapshotConfig } from "../core/index.js";
import type { Logger } from "../platform/logger.js";
import type { DecisionStore, SerializedTrace, TraceRow } from "./decision-store.js";
import { serializeRecord } from "./trace-record.js";

const gzipAsync = promisify(gzip);

/** A serialized trace and the configuration version it must be replayed against. */
export type QueuedTrace = SerializedTrace & { policy: SnapshotConfig };

export interface TraceWriterOptions {
  /** Serialized trace bytes waiting beyond this are dropped (and counted), never blocking a decision. */
  maxQueueBytes?: number;
  /** Rows per INSERT. */
  batchSize?: number;
  flushIntervalMs?: number;
}

/**
 * Writes decision traces after the answer (spec 2.16): a bounded in-memory queue flushed in
 * batches. When the database falls behind, the oldest waiting traces are dropped and reported,
 * so tracing can slow nothing down and never loses an answer. Each batch first stores the
 * configuration versions its traces name and that are not stored yet (trace-record.ts).
 */
export class TraceWriter {
  private queue: QueuedTrace[] = [];
  /** Configurations known to be stored; a recompiled snapshot (even after a workspace reset) is checked again. */
  private readonly storedPolicies = new WeakSet<SnapshotConfig>();
  /** Traces being serialized and compressed, and who waits for them to be queued. */
  private pending = 0;
  private readonly idle: Array<() => void> = [];
  private queuedBytes = 0;
  private dropped = 0;
  private draining: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly maxQueueBytes: number;
  private readonly batchSize: number;

  constructor(
    private readonly store: DecisionStore,
    private readonly logger: Logger,
    options: TraceWriterOptions = {},
  ) {
    this.maxQueueBytes = options.maxQueueBytes ?? 64 * 1024 * 1024;
    this.batchSize = options.batchSize ?? 50;
    this.timer = setInterval(() => void this.drainSoon(), options.flushIntervalMs ?? 50);
    this.timer.unref();
  }

  /**
   * Builds, hashes and serializes one record at a time, after the answer has gone out
   * (setImmediate runs after the response is written): `row` is called then, so the record's
   * packing and copying cost the answer nothing. The JSON is stored as it is and PostgreSQL
   * compresses it (lz4, migration 0028): gzip here cost about 5% of a Recommend's CPU on the event
   * loop, lz4 in the database a fraction of that, off it. The queue is bounded by what it really
   * holds: bytes.
   */
  enqueue(recommendationId: string, row: () => Omit<TraceRow, "inputs_hash">, policy: SnapshotConfig): void {
    this.pending++;
    setImmediate(() => {
      this.pending--;
      try {
        const built = row();
        const { bytes, inputsHash } = serializeRecord(built.policy_version_hash, built.trace);
        this.enqueueSerialized(serialized(built, inputsHash, bytes, policy));
      } catch (err) {
        this.dropped++;
        this.logger.error({ err, recommendationId }, "decision trace could not be serialized");
      }
      if (this.pending === 0) for (const resolve of this.idle.splice(0)) resolve();
    });
  }

  /** A trace already serialized, queued as `enqueue` queues its own (bench/floor-server.ts writes copies of one). */
  enqueueSerialized(trace: QueuedTrace): void {
    this.queuedBytes += trace.trace.length;
    this.queue.push(trace);
    while (this.queuedBytes > this.maxQueueBytes && this.queue.length > 1) {
      this.queuedBytes -= this.queue.shift()!.trace.length;
      if (this.dropped++ % 1000 === 0) this.logger.warn({ droppedTotal: this.dropped }, "decision trace queue full: dropping the oldest traces");
    }
    if (this.queue.length >= this.batchSize) void this.drainSoon();
  }

  /** Traces waiting to be written (metrics). */
  get queueLength(): number {
    return this.queue.length;
  }

  /** Counts of what was dropped since start: an operator's signal that traces lag. */
  get droppedCount(): number {
    return this.dropped;
  }

  /** Writes everything enqueued so far, once compressed (shutdown, tests). */
  async flush(): Promise<void> {
    if (this.pending > 0) await new Promise<void>((resolve) => this.idle.push(resolve));
    await this.drainSoon();
  }

  /** Writes what is queued; one drain at a time, and it runs until the queue is empty. */
  private drainSoon(): Promise<void> {
    this.draining ??= this.drain().finally(() => (this.draining = null));
    return this.draining;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.batchSize);
      this.queuedBytes -= batch.reduce((n, t) => n + t.trace.length, 0);
      try {
        await this.storePolicies(batch);
        await this.store.insertTraces(batch.map(({ policy: _p, ...row }) => row));
      } catch (err) {
        this.dropped += batch.length;
        this.logger.error({ err, dropped: batch.length, droppedTotal: this.dropped }, "decision traces could not be written");
      }
    }
  }

  /** Each configuration once per compiled snapshot; a version another process stored already stays. */
  private async storePolicies(batch: QueuedTrace[]): Promise<void> {
    for (const t of batch) {
      if (this.storedPolicies.has(t.policy)) continue;
      await this.store.insertPolicy(t.tenant_id, t.policy_version_hash, await gzipAsync(JSON.stringify(t.policy)));
      this.storedPolicies.add(t.policy);
    }
  }
}

/**
 * The row as it is queued: members named, not spread (`{ ...row, inputs_hash, trace }`), because on
 * Node 20's V8 a spread copy that gains members takes a slow path and promotes what it allocates
 * (docs/performance.md, eleventh session).
 */
function serialized(row: Omit<TraceRow, "inputs_hash">, inputsHash: string, bytes: Buffer, policy: SnapshotConfig): QueuedTrace {
  return {
    tenant_id: row.tenant_id,
    id: row.id,
    recommendation_id: row.recommendation_id,
    customer_id: row.customer_id,
    flow_id: row.flow_id,
    degraded_scoring: row.degraded_scoring,
    selected_count: row.selected_count,
    rejected_count: row.rejected_count,
    policy_version_hash: row.policy_version_hash,
    created_at: row.created_at,
    inputs_hash: inputsHash,
    trace: bytes,
    policy,
  };
}

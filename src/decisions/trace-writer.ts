import { gzip } from "node:zlib";
import type { Logger } from "../platform/logger.js";
import type { DecisionStore, SerializedTrace, TraceRow } from "./decision-store.js";

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
 * so tracing can slow nothing down and never loses an answer.
 */
export class TraceWriter {
  private queue: SerializedTrace[] = [];
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
   * Serializes one trace at a time, after the answer has gone out (setImmediate runs after the
   * response is written), so that a backlog never becomes one long stringify of a whole batch;
   * compresses it on libuv's thread pool, off the event loop; and bounds the queue by what it really
   * holds: bytes.
   */
  enqueue(row: TraceRow): void {
    this.pending++;
    setImmediate(() =>
      gzip(JSON.stringify(row.trace), { level: 1 }, (err, compressed) => {
        this.pending--;
        if (err) {
          this.dropped++;
          this.logger.error({ err, recommendationId: row.recommendation_id }, "decision trace could not be compressed");
        } else this.push({ ...row, trace: compressed });
        if (this.pending === 0) for (const resolve of this.idle.splice(0)) resolve();
      }),
    );
  }

  private push(trace: SerializedTrace): void {
    this.queuedBytes += trace.trace.length;
    this.queue.push(trace);
    while (this.queuedBytes > this.maxQueueBytes && this.queue.length > 1) {
      this.queuedBytes -= this.queue.shift()!.trace.length;
      if (this.dropped++ % 1000 === 0) this.logger.warn({ droppedTotal: this.dropped }, "decision trace queue full: dropping the oldest traces");
    }
    if (this.queue.length >= this.batchSize) void this.drainSoon();
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
        await this.store.insertTraces(batch);
      } catch (err) {
        this.dropped += batch.length;
        this.logger.error({ err, dropped: batch.length, droppedTotal: this.dropped }, "decision traces could not be written");
      }
    }
  }
}

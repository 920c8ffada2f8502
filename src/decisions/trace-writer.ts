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
  private queuedBytes = 0;
  private dropped = 0;
  private flushing: Promise<void> | null = null;
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
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 50);
    this.timer.unref();
  }

  /**
   * Serializes one trace at a time, after the answer has gone out (setImmediate runs after the
   * response is written), so that a backlog never becomes one long stringify of a whole batch and
   * the queue can be bounded by what it really holds: bytes.
   */
  enqueue(row: TraceRow): void {
    setImmediate(() => this.push(row));
  }

  private push(row: TraceRow): void {
    const trace: SerializedTrace = { ...row, trace: JSON.stringify(row.trace) };
    this.queuedBytes += trace.trace.length;
    this.queue.push(trace);
    while (this.queuedBytes > this.maxQueueBytes && this.queue.length > 1) {
      this.queuedBytes -= this.queue.shift()!.trace.length;
      if (this.dropped++ % 1000 === 0) this.logger.warn({ droppedTotal: this.dropped }, "decision trace queue full: dropping the oldest traces");
    }
    if (this.queue.length >= this.batchSize) void this.flush();
  }

  /** Counts of what was dropped since start: an operator's signal that traces lag. */
  get droppedCount(): number {
    return this.dropped;
  }

  /** Writes everything queued, including traces enqueued this tick; concurrent calls share one flush. */
  flush(): Promise<void> {
    this.flushing ??= new Promise((resolve) => setImmediate(resolve))
      .then(() => this.drain())
      .finally(() => (this.flushing = null));
    return this.flushing;
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

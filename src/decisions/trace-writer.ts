import type { Logger } from "../platform/logger.js";
import type { DecisionStore, TraceRow } from "./decision-store.js";

export interface TraceWriterOptions {
  /** Traces waiting beyond this are dropped (and counted), never blocking a decision. */
  maxQueue?: number;
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
  private queue: TraceRow[] = [];
  private dropped = 0;
  private flushing: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly maxQueue: number;
  private readonly batchSize: number;

  constructor(
    private readonly store: DecisionStore,
    private readonly logger: Logger,
    options: TraceWriterOptions = {},
  ) {
    this.maxQueue = options.maxQueue ?? 10_000;
    this.batchSize = options.batchSize ?? 200;
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 50);
    this.timer.unref();
  }

  enqueue(row: TraceRow): void {
    if (this.queue.length >= this.maxQueue) {
      this.queue.shift();
      if (this.dropped++ % 1000 === 0) this.logger.warn({ droppedTotal: this.dropped }, "decision trace queue full: dropping the oldest traces");
    }
    this.queue.push(row);
    if (this.queue.length >= this.batchSize) void this.flush();
  }

  /** Counts of what was dropped since start: an operator's signal that traces lag. */
  get droppedCount(): number {
    return this.dropped;
  }

  /** Writes everything queued; concurrent calls share one flush. */
  flush(): Promise<void> {
    this.flushing ??= this.drain().finally(() => (this.flushing = null));
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, this.batchSize);
      try {
        await this.store.insertTraces(batch);
      } catch (err) {
        this.dropped += batch.length;
        this.logger.error({ err, dropped: batch.length, droppedTotal: this.dropped }, "decision traces could not be written");
      }
    }
  }
}

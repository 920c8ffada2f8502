/** What fires slots in-process: BullMQ job schedulers on Redis, or local timers on one node. */
export interface SchedulerDriver {
  readonly kind: "bullmq" | "local";
  start(): Promise<void>;
  /** Fires nothing more; waits for running attempts at most `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

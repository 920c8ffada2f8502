/** How often a failed slot is tried again, and how long to wait between tries. */
export interface RetryPolicy {
  /** Attempts per slot, the first one included. */
  attempts: number;
  /** Wait after the first failure; each later failure doubles it. */
  baseDelayMs: number;
  /** No wait is longer than this. */
  maxDelayMs: number;
}

/** Five attempts over about fifteen seconds: long enough to ride out a database failover. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 5, baseDelayMs: 1_000, maxDelayMs: 60_000 };

/**
 * Exponential backoff after `failures` failed attempts (1, 2, 4, 8 × base ...). The one formula of
 * both drivers: BullMQ takes it as its custom backoff strategy, the local driver waits it out.
 */
export function retryDelayMs(policy: RetryPolicy, failures: number): number {
  return Math.min(policy.baseDelayMs * 2 ** Math.max(0, failures - 1), policy.maxDelayMs);
}

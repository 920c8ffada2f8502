import { setTimeout as sleep } from "node:timers/promises";

/**
 * Waits for `work` to settle (fulfilled or rejected alike), at most `ms`: true when it did in time.
 * The wait of a graceful stop, which must not outlast its grace nor keep the process alive.
 */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([work.then(() => true, () => true), sleep(ms, false, { ref: false })]);
}

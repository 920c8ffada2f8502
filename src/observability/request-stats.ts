import type { RequestStats } from "./operational-signals.js";
import { latencyQuantile } from "./latency-histogram.js";
import { MINUTE_MS, MinuteBuckets, type MinuteCounts } from "./minute-buckets.js";

/** How long per-minute request statistics are kept: the longest alert window worth asking about. */
export const REQUEST_STATS_RETENTION_MS = 2 * 24 * 60 * MINUTE_MS;

/** RequestStats that this process feeds: the gateway records every answered request of a tenant. */
export interface RecordingRequestStats extends RequestStats {
  /** `status` is the HTTP status of the answer (gRPC answers as the REST door would have). Never awaits. */
  record(tenantId: string, durationMs: number, status: number, atMs?: number): void;
  /** Makes what this process recorded so far visible to every process. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/**
 * [from, to) as whole minutes: a minute counts when it overlaps the window, so the window is widened
 * to minute boundaries (the resolution of the statistics), and bounded by the retention.
 */
export function minuteRange(from: Date, to: Date, retentionMs: number, nowMs = Date.now()): { fromMinute: number; toMinute: number } {
  const toMinute = Math.min(Math.ceil(to.getTime() / MINUTE_MS), Math.floor(nowMs / MINUTE_MS) + 1);
  const fromMinute = Math.max(Math.floor(from.getTime() / MINUTE_MS), Math.floor((nowMs - retentionMs) / MINUTE_MS));
  return { fromMinute, toMinute };
}

/** The two statistics of the contract from a source of merged counts. */
export function statsOver(counts: (tenantId: string, from: Date, to: Date) => Promise<MinuteCounts>): RequestStats {
  return {
    latencyP99Ms: async (tenantId, from, to) => latencyQuantile((await counts(tenantId, from, to)).latency, 0.99),
    http5xxCount: async (tenantId, from, to) => (await counts(tenantId, from, to)).errors5xx,
  };
}

/**
 * The single-process default (no REDIS_URL): the counts live in this process, which is the only
 * one answering requests. Minutes older than the retention are forgotten once a minute.
 */
export function createMemoryRequestStats(retentionMs = REQUEST_STATS_RETENTION_MS): RecordingRequestStats {
  const buckets = new MinuteBuckets();
  const prune = setInterval(() => buckets.prune(Math.floor((Date.now() - retentionMs) / MINUTE_MS)), MINUTE_MS);
  prune.unref();
  return {
    ...statsOver(async (tenantId, from, to) => {
      const { fromMinute, toMinute } = minuteRange(from, to, retentionMs);
      return buckets.read(tenantId, fromMinute, toMinute);
    }),
    record: (tenantId, durationMs, status, atMs = Date.now()) => buckets.record(tenantId, durationMs, status, atMs),
    flush: async () => {},
    close: async () => clearInterval(prune),
  };
}

import { tenantKey, type RedisClient } from "../platform/redis.js";
import type { Logger } from "../platform/logger.js";
import { LATENCY_BUCKETS } from "./latency-histogram.js";
import { MINUTE_MS, MinuteBuckets, addCounts, emptyCounts, type DrainedMinute, type MinuteCounts } from "./minute-buckets.js";
import { REQUEST_STATS_RETENTION_MS, minuteRange, statsOver, type RecordingRequestStats } from "./request-stats.js";

export interface RedisRequestStatsOptions {
  flushIntervalMs?: number;
  retentionMs?: number;
}

/** Hash fields of a tenant-minute: `b<i>` latency bucket i, `e` answers with a 5xx status. */
const ERRORS_FIELD = "e";
const bucketField = (i: number) => `b${i}`;

function minuteKey(tenantId: string, minute: number): string {
  return tenantKey(tenantId, "reqstats", String(minute));
}

function parseCounts(hash: Record<string, string>): MinuteCounts {
  const counts = emptyCounts();
  for (let i = 0; i < LATENCY_BUCKETS; i++) counts.latency[i] = Number(hash[bucketField(i)] ?? 0);
  counts.errors5xx = Number(hash[ERRORS_FIELD] ?? 0);
  return counts;
}

/**
 * Request statistics shared by every process (the `latency_p99` and `http_5xx_count` alert
 * metrics): each process counts in memory and adds its counts to Redis about once a second, one
 * pipeline per tenant and flush (a tenant's keys share a Redis Cluster slot; different tenants'
 * may not), into a hash per tenant and minute, `t:{<tenantId>}:reqstats:<minute>`, that
 * expires after the retention. Reads merge the hashes of the window's minutes; this process's own
 * counts are flushed first, another process's last second may not have arrived yet.
 *
 * A flush that fails is dropped and logged, not retried: a retry after a partly applied pipeline
 * would count requests twice, and these are statistics, not a ledger.
 */
export function createRedisRequestStats(redis: RedisClient, logger: Logger, options: RedisRequestStatsOptions = {}): RecordingRequestStats {
  const retentionMs = options.retentionMs ?? REQUEST_STATS_RETENTION_MS;
  const buffer = new MinuteBuckets();
  let chain: Promise<void> = Promise.resolve();
  let failing = false;

  /** One tenant's minutes, one pipeline: its keys share the tenant's hash tag, so one Cluster slot. */
  const sendTenant = async (minutes: DrainedMinute[]): Promise<void> => {
    const pipeline = redis.pipeline();
    for (const { tenantId, minute, counts } of minutes) {
      const key = minuteKey(tenantId, minute);
      counts.latency.forEach((n, i) => {
        if (n) pipeline.hincrby(key, bucketField(i), n);
      });
      if (counts.errors5xx) pipeline.hincrby(key, ERRORS_FIELD, counts.errors5xx);
      pipeline.expireat(key, Math.ceil((minute * MINUTE_MS + retentionMs) / 1000));
    }
    const results = (await pipeline.exec()) ?? [];
    const failed = results.find(([err]) => err);
    if (failed) throw failed[0];
  };

  const send = async (drained: DrainedMinute[]): Promise<void> => {
    if (!drained.length) return;
    const byTenant = new Map<string, DrainedMinute[]>();
    for (const d of drained) {
      const minutes = byTenant.get(d.tenantId);
      if (minutes) minutes.push(d);
      else byTenant.set(d.tenantId, [d]);
    }
    // Every pipeline is sent, even when one fails, so one outage is logged once per flush.
    const outcomes = await Promise.allSettled([...byTenant.values()].map(sendTenant));
    const failure = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (!failure) {
      if (failing) logger.info("request statistics reach Redis again");
      failing = false;
      return;
    }
    // Once per outage, not once a second.
    if (!failing) logger.warn({ err: failure.reason }, "request statistics could not be written to Redis; dropping them until it answers");
    failing = true;
  };

  /** One flush at a time, in order, so that a read after a flush sees everything recorded before it. */
  const flush = (): Promise<void> => {
    chain = chain.then(() => send(buffer.drain()));
    return chain;
  };
  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? 1_000);
  timer.unref();

  const counts = async (tenantId: string, from: Date, to: Date): Promise<MinuteCounts> => {
    await flush();
    const { fromMinute, toMinute } = minuteRange(from, to, retentionMs);
    const merged = emptyCounts();
    if (toMinute <= fromMinute) return merged;
    const pipeline = redis.pipeline();
    for (let m = fromMinute; m < toMinute; m++) pipeline.hgetall(minuteKey(tenantId, m));
    for (const [err, hash] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      addCounts(merged, parseCounts(hash as Record<string, string>));
    }
    return merged;
  };

  return {
    ...statsOver(counts),
    record: (tenantId, durationMs, status, atMs = Date.now()) => buffer.record(tenantId, durationMs, status, atMs),
    flush,
    close: async () => {
      clearInterval(timer);
      await flush();
    },
  };
}

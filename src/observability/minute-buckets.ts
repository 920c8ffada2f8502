import { LATENCY_BUCKETS, latencyBucket } from "./latency-histogram.js";

export const MINUTE_MS = 60_000;

/** One tenant's requests in one minute: the latency histogram and the 5xx answers. */
export interface MinuteCounts {
  latency: number[];
  errors5xx: number;
}

export function emptyCounts(): MinuteCounts {
  return { latency: new Array<number>(LATENCY_BUCKETS).fill(0), errors5xx: 0 };
}

export function addCounts(into: MinuteCounts, from: MinuteCounts): void {
  for (let i = 0; i < LATENCY_BUCKETS; i++) into.latency[i] += from.latency[i];
  into.errors5xx += from.errors5xx;
}

export interface DrainedMinute {
  tenantId: string;
  minute: number;
  counts: MinuteCounts;
}

/**
 * Request counts per tenant and minute (minutes since the epoch), in this process. Recording
 * allocates only when a tenant's minute is first seen, so the request path stays cheap.
 */
export class MinuteBuckets {
  private byTenant = new Map<string, Map<number, MinuteCounts>>();

  record(tenantId: string, durationMs: number, status: number, atMs: number): void {
    const minute = Math.floor(atMs / MINUTE_MS);
    let minutes = this.byTenant.get(tenantId);
    if (!minutes) this.byTenant.set(tenantId, (minutes = new Map()));
    let counts = minutes.get(minute);
    if (!counts) minutes.set(minute, (counts = emptyCounts()));
    counts.latency[latencyBucket(durationMs)]++;
    if (status >= 500) counts.errors5xx++;
  }

  /** The tenant's counts merged over minutes [fromMinute, toMinute). */
  read(tenantId: string, fromMinute: number, toMinute: number): MinuteCounts {
    const out = emptyCounts();
    for (const [minute, counts] of this.byTenant.get(tenantId) ?? []) {
      if (minute >= fromMinute && minute < toMinute) addCounts(out, counts);
    }
    return out;
  }

  /** Everything recorded so far, leaving this empty (what a flush sends). */
  drain(): DrainedMinute[] {
    const out: DrainedMinute[] = [];
    for (const [tenantId, minutes] of this.byTenant) {
      for (const [minute, counts] of minutes) out.push({ tenantId, minute, counts });
    }
    this.byTenant = new Map();
    return out;
  }

  /** Forgets minutes before `minute`, so that memory stays bounded by the retention. */
  prune(minute: number): void {
    for (const [tenantId, minutes] of this.byTenant) {
      for (const m of minutes.keys()) if (m < minute) minutes.delete(m);
      if (minutes.size === 0) this.byTenant.delete(tenantId);
    }
  }
}

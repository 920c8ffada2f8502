import type { RateLimitDecision, RateLimiter } from "./rate-limiter.js";

/** Slots a lease took that it did not use: given back to the window when the lease is replaced. */
export interface UnusedSlots {
  /** The member name the lease's slots were added under (slot i is `${member}:${i}`). */
  member: string;
  /** First and last unused slot, inclusive. */
  from: number;
  to: number;
}

export interface TakeRequest {
  key: string;
  limit: number;
  windowMs: number;
  /** Slots this hit needs: all or none. */
  cost: number;
  /** Slots wanted beyond `cost` for the hits that will follow; the store grants fewer near the limit. */
  extra: number;
  /** Names the slots: unique per take, across processes. */
  member: string;
  giveBack: UnusedSlots | null;
}

export interface Taken {
  allowed: boolean;
  /** Slots added (cost + extras), 0 when refused. */
  granted: number;
  /** Free slots in the window after the grant. */
  remaining: number;
  /** When refused: milliseconds until `cost` slots free up. */
  waitMs: number;
}

/** One atomic call to the shared window (the Redis script in rate-limiter.ts). */
export type TakeSlots = (request: TakeRequest) => Promise<Taken>;

interface Lease {
  limit: number;
  windowMs: number;
  member: string;
  granted: number;
  used: number;
  /** Free slots in the window right after the grant, this lease's slots counted as taken. */
  remainingAfter: number;
  expiresAt: number;
}

/** A window as this process holds it: its lease, the lease being taken, and the hits that found none. */
interface Held {
  lease: Lease | null;
  taking: Promise<unknown> | null;
  /** Hits since the lease was taken that it could not serve: demand the next lease should cover. */
  misses: number;
}

const SWEEP_EVERY_TAKES = 1000;
const FORGET_AFTER_MS = 10_000;

export interface LeaseOptions {
  /** A lease's life; its slots count in the window from the moment it was taken. */
  leaseMs?: number;
  /** The most extra slots one lease takes. */
  maxExtra?: number;
  now?: () => number;
}

/**
 * A shared sliding window taken a few slots at a time. Every hit on the same shared window would
 * be one store round trip on every request (about 6% of a Recommend's CPU, most of it the socket
 * write that wakes the store); instead a process takes slots in advance, as many as it needed during the last lease, and
 * spends them locally for at most `leaseMs`. The window never admits more than its limit, because
 * every slot spent was taken from it atomically. What it changes (docs/limits.md):
 * - a slot counts from when its lease was taken, so it leaves the window up to `leaseMs` early;
 * - near the limit a lease takes at most an eighth of what is free, so processes sharing a window
 *   cannot starve each other with slots they hold; at small limits that is no extra at all;
 * - slots a lease did not use are given back with the next lease on the same window; a process
 *   that stops calling keeps at most one lease of slots counted until the window passes;
 * - `remaining` is the window as this process last saw it, less what it spent since.
 * One lease is taken at a time per window; a hit that finds none while it is being taken waits
 * for it, and when it is not enough, takes its own slots exactly, without a lease. A process that
 * hits a window rarely takes one slot per hit: exactly the shared log.
 */
export function leasedRateLimiter(take: TakeSlots, newMember: () => string, options: LeaseOptions = {}): RateLimiter {
  const leaseMs = options.leaseMs ?? 100;
  const maxExtra = options.maxExtra ?? 256;
  const now = options.now ?? Date.now;
  const windows = new Map<string, Held>();
  let takesSinceSweep = 0;

  const admitted = (limit: number, remaining: number): RateLimitDecision => ({ allowed: true, limit, remaining, retryAfterSeconds: 0 });

  const spend = (held: Held, limit: number, windowMs: number, cost: number): RateLimitDecision | null => {
    const lease = held.lease;
    if (!lease || lease.limit !== limit || lease.windowMs !== windowMs || now() >= lease.expiresAt || lease.granted - lease.used < cost) return null;
    lease.used += cost;
    return admitted(limit, lease.remainingAfter + lease.granted - lease.used);
  };

  const refusal = (limit: number, taken: Taken): RateLimitDecision => ({
    allowed: false,
    limit,
    remaining: 0,
    retryAfterSeconds: Math.max(1, Math.ceil(taken.waitMs / 1000)),
  });

  /** Slots for this hit only: what a hit does when the lease being taken did not cover it. */
  async function takeExactly(key: string, limit: number, windowMs: number, cost: number): Promise<RateLimitDecision> {
    const taken = await take({ key, limit, windowMs, cost, extra: 0, member: newMember(), giveBack: null });
    return taken.allowed ? admitted(limit, taken.remaining) : refusal(limit, taken);
  }

  async function takeLease(key: string, held: Held, limit: number, windowMs: number, cost: number): Promise<RateLimitDecision> {
    const t = now();
    sweep(t);
    const old = held.lease?.limit === limit && held.lease.windowMs === windowMs ? held.lease : null;
    // A lease used up before it expired asks for twice as much; one that just expired for what it
    // served; after a pause the demand it saw is stale, and the window is taken slot by slot again.
    const served = !old ? 0 : t < old.expiresAt ? 2 * old.granted : t < old.expiresAt + leaseMs ? old.used : 0;
    const extra = Math.min(maxExtra, Math.max(0, served + held.misses - cost));
    const previous = held.lease;
    const giveBack = previous && previous.used < previous.granted ? { member: previous.member, from: previous.used + 1, to: previous.granted } : null;
    const member = newMember();
    // The old lease stops serving now: its unused slots are going back.
    held.lease = null;
    held.misses = 0;
    const taking = take({ key, limit, windowMs, cost, extra, member, giveBack });
    held.taking = taking;
    try {
      const taken = await taking;
      if (!taken.allowed) return refusal(limit, taken);
      held.lease = { limit, windowMs, member, granted: taken.granted, used: cost, remainingAfter: taken.remaining, expiresAt: t + leaseMs };
      return admitted(limit, taken.remaining + taken.granted - cost);
    } finally {
      held.taking = null;
    }
  }

  /** Windows not hit for a while (an address seen once) are forgotten: their next hit starts from one slot. */
  function sweep(t: number): void {
    if (++takesSinceSweep < SWEEP_EVERY_TAKES) return;
    takesSinceSweep = 0;
    for (const [key, held] of windows) if (!held.taking && (!held.lease || held.lease.expiresAt < t - FORGET_AFTER_MS)) windows.delete(key);
  }

  return {
    async hit(key, limit, windowMs, cost = 1) {
      let held = windows.get(key);
      if (!held) windows.set(key, (held = { lease: null, taking: null, misses: 0 }));
      const spent = spend(held, limit, windowMs, cost);
      if (spent) return spent;
      if (!held.taking) return takeLease(key, held, limit, windowMs, cost);
      await held.taking.catch(() => undefined);
      const after = spend(held, limit, windowMs, cost);
      if (after) return after;
      held.misses += cost;
      return takeExactly(key, limit, windowMs, cost);
    },
  };
}

/**
 * A seedable pseudo-random source. Randomness in the core (Thompson sampling) must replay exactly
 * from a recorded seed, so Math.random is never used. mulberry32 is small, fast and good enough
 * for sampling; it is not cryptographic.
 */
import { fnv1a32 } from "./hash.js";

/** Returns uniform numbers in [0, 1). */
export type Random = () => number;

/** mulberry32 over a 32-bit integer seed. */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
}

/** A generator seeded from a string (hashed with FNV-1a 32), e.g. `<seed>|<modelKey>|<offerId>`. */
export function createRandom(seed: string): Random {
  return mulberry32(fnv1a32(seed));
}

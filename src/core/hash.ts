/**
 * FNV-1a hashes. The core may not import node:crypto (it must run unchanged in any worker or
 * runtime), and it needs stable, fast, non-cryptographic hashes: 32 bits for bucketing customers
 * (maturity ramp, seeds) and 64 bits for fingerprints of inputs and configuration, where 32 bits
 * would collide too soon. Nothing here resists an adversary; fingerprints detect change, they do
 * not authenticate it.
 */
import { canonicalJson } from "./canonical-json.js";

const encoder = new TextEncoder();

const FNV32_OFFSET = 0x811c9dc5;
const FNV32_PRIME = 0x01000193;

/** FNV-1a 32-bit over the UTF-8 bytes of `text`, as an unsigned integer. */
export function fnv1a32(text: string): number {
  let hash = FNV32_OFFSET;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV32_PRIME);
  }
  return hash >>> 0;
}

/**
 * FNV-1a 64-bit over the UTF-8 bytes of `text`, as 16 lowercase hex digits. The state is kept as
 * four 16-bit limbs so the multiply stays in exact double arithmetic: BigInt per byte cost most of a
 * decision's CPU time in garbage. The prime is 2^40 + 0x1b3, so the product is a small multiply
 * plus a 40-bit shift of the low limbs.
 */
export function fnv1a64(text: string): string {
  let v0 = 0x2325;
  let v1 = 0x8422;
  let v2 = 0x9ce4;
  let v3 = 0xcbf2;
  const bytes = encoder.encode(text);
  for (let i = 0; i < bytes.length; i++) {
    v0 ^= bytes[i];
    const t0 = v0 * 0x1b3;
    let t1 = v1 * 0x1b3;
    let t2 = v2 * 0x1b3 + (v0 << 8);
    const t3 = v3 * 0x1b3 + (v1 << 8);
    t1 += t0 >>> 16;
    v0 = t0 & 0xffff;
    t2 += t1 >>> 16;
    v1 = t1 & 0xffff;
    v3 = (t3 + (t2 >>> 16)) & 0xffff;
    v2 = t2 & 0xffff;
  }
  return [v3, v2, v1, v0].map((limb) => limb.toString(16).padStart(4, "0")).join("");
}

/**
 * A uniform fraction in [0, 1) for `text`: the same customer lands in the same place every time.
 * FNV-1a alone spreads near-identical keys (`customer-1`, `customer-2` …) poorly across its high
 * bits, which the fraction reads, so the hash goes through MurmurHash3's 32-bit finaliser first.
 */
export function hashFraction(text: string): number {
  return fmix32(fnv1a32(text)) / 0x1_0000_0000;
}

/** MurmurHash3's avalanche step: every input bit flips each output bit with probability ~1/2. */
function fmix32(hash: number): number {
  let h = hash;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Fingerprint of any plain-data value: FNV-1a 64 over its canonical JSON. */
export function fingerprint(value: unknown): string {
  return fnv1a64(canonicalJson(value));
}

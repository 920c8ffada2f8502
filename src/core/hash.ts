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
const FNV64_OFFSET = 0xcbf29ce484222325n;
const FNV64_PRIME = 0x100000001b3n;
const MASK64 = 0xffffffffffffffffn;

/** FNV-1a 32-bit over the UTF-8 bytes of `text`, as an unsigned integer. */
export function fnv1a32(text: string): number {
  let hash = FNV32_OFFSET;
  for (const byte of encoder.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV32_PRIME);
  }
  return hash >>> 0;
}

/** FNV-1a 64-bit over the UTF-8 bytes of `text`, as 16 lowercase hex digits. */
export function fnv1a64(text: string): string {
  let hash = FNV64_OFFSET;
  for (const byte of encoder.encode(text)) {
    hash ^= BigInt(byte);
    hash = (hash * FNV64_PRIME) & MASK64;
  }
  return hash.toString(16).padStart(16, "0");
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

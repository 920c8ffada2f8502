import { endianness } from "node:os";
import type { AdaptiveCount } from "../core/index.js";

/**
 * A trace record's adaptive evidence, written compactly. A 200-offer decision records 400 counts,
 * and JSON.stringify formatted them at about 70 ns each: a third of serializing a trace and some
 * 5% of a Recommend's CPU (docs/performance.md, eighteenth session). Packed, the counts are
 * little-endian unsigned 32-bit pairs (successes, trials) in base64 behind a `u32le:` tag, with
 * 0xFFFFFFFF in both words where nothing was counted. Counts that do not fit (not whole numbers
 * from 0 to 0xFFFFFFFE) are written as the `[successes, trials]` pairs that records held before,
 * which every reader still accepts.
 */
export type RecordedEvidence = string | Array<[number, number] | null>;

const TAG = "u32le:";
const NONE = 0xffffffff;
const BIG_ENDIAN = endianness() === "BE";

const fits = (n: number) => Number.isInteger(n) && n >= 0 && n < NONE;

/**
 * The words of the record being packed, reused: packing is synchronous, and a typed array this
 * size keeps its memory outside the heap, which costs more to allocate and free per record than
 * the packing itself.
 */
let scratch = new Uint32Array(512);

export function packEvidence(counts: ReadonlyArray<AdaptiveCount | null>): RecordedEvidence {
  if (scratch.length < counts.length * 2) scratch = new Uint32Array(counts.length * 2);
  const words = scratch.subarray(0, counts.length * 2);
  for (let i = 0; i < counts.length; i++) {
    const count = counts[i];
    if (!count) {
      words[2 * i] = NONE;
      words[2 * i + 1] = NONE;
    } else if (fits(count.successes) && fits(count.trials)) {
      words[2 * i] = count.successes;
      words[2 * i + 1] = count.trials;
    } else {
      return counts.map((c) => (c ? [c.successes, c.trials] : null));
    }
  }
  const bytes = Buffer.from(words.buffer, words.byteOffset, words.byteLength);
  if (BIG_ENDIAN) bytes.swap32();
  return TAG + bytes.toString("base64");
}

/** The counts of a record's evidence, packed or as pairs; throws on anything else (a corrupt record). */
export function unpackEvidence(recorded: RecordedEvidence): Array<AdaptiveCount | null> {
  if (Array.isArray(recorded)) return recorded.map((pair) => (pair ? { successes: pair[0], trials: pair[1] } : null));
  if (typeof recorded !== "string" || !recorded.startsWith(TAG)) throw new Error("trace record: unreadable adaptive evidence");
  const bytes = Buffer.from(recorded.slice(TAG.length), "base64");
  if (bytes.length % 8 !== 0) throw new Error("trace record: adaptive evidence is not whole pairs of counts");
  const counts: Array<AdaptiveCount | null> = [];
  for (let at = 0; at < bytes.length; at += 8) {
    const successes = bytes.readUInt32LE(at);
    const trials = bytes.readUInt32LE(at + 4);
    counts.push(successes === NONE && trials === NONE ? null : { successes, trials });
  }
  return counts;
}

import { randomFillSync } from "node:crypto";

/**
 * Time-ordered UUIDs (v7, RFC 9562): `ORDER BY id DESC` is newest first, which keyset pages rely on.
 * Within one millisecond a process's ids still increase: a 32-bit counter, seeded at random when
 * the millisecond changes, fills rand_a and the top of rand_b (RFC 9562 section 6.2, method 1, as
 * the `uuid` package lays it out), and when it wraps the timestamp moves on by one.
 *
 * Written here rather than taken from `uuid`: a Recommend makes six ids, and the package sliced a
 * fresh array from a 256-byte random pool per id and built each string from 20 concatenations,
 * about 1 KB of garbage and 1 µs an id (docs/performance.md, twenty-first session). Here the
 * random bytes come from a 4 KB pool, the text is written into one reused buffer, and an id costs
 * the one string it is.
 */
const RANDOM_BYTES_PER_ID = 10;
const pool = Buffer.allocUnsafeSlow(4096);
let poolAt = pool.length;
const text = Buffer.from("00000000-0000-7000-8000-000000000000", "latin1");
const HEX = Buffer.from("0123456789abcdef", "latin1");

let lastMs = -Infinity;
let counter = 0;

export function newId(): string {
  if (poolAt + RANDOM_BYTES_PER_ID > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const r = poolAt;
  poolAt += RANDOM_BYTES_PER_ID;
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    // 31 bits: the counter starts in its lower half, so a busy millisecond rarely wraps it.
    counter = (pool[r + 6] << 23) | (pool[r + 7] << 16) | (pool[r + 8] << 8) | pool[r + 9];
  } else {
    counter = (counter + 1) | 0;
    if (counter === 0) lastMs++;
  }
  const ms = lastMs;
  hexByte(0, (ms / 0x10000000000) & 0xff);
  hexByte(2, (ms / 0x100000000) & 0xff);
  hexByte(4, (ms / 0x1000000) & 0xff);
  hexByte(6, (ms / 0x10000) & 0xff);
  hexByte(9, (ms / 0x100) & 0xff);
  hexByte(11, ms & 0xff);
  hexByte(14, 0x70 | ((counter >>> 28) & 0x0f));
  hexByte(16, (counter >>> 20) & 0xff);
  hexByte(19, 0x80 | ((counter >>> 14) & 0x3f));
  hexByte(21, (counter >>> 6) & 0xff);
  hexByte(24, ((counter << 2) & 0xff) | (pool[r] & 0x03));
  for (let i = 1; i <= 5; i++) hexByte(24 + 2 * i, pool[r + i]);
  return text.toString("latin1");
}

function hexByte(at: number, byte: number): void {
  text[at] = HEX[byte >> 4];
  text[at + 1] = HEX[byte & 0x0f];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids arrive from paths and bodies; a malformed one can name no row, so callers answer 404/400 without a query. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

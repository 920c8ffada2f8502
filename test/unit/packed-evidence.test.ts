import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { packEvidence, unpackEvidence } from "../../src/decisions/packed-evidence.js";

describe("a trace record's packed evidence", () => {
  test("whole counts pack into tagged base64 and unpack to the same counts, nulls kept in place", () => {
    const counts = [{ successes: 0, trials: 0 }, null, { successes: 7, trials: 4_000_000_000 }, { successes: 0xfffffffe, trials: 0xfffffffe }, null];
    const packed = packEvidence(counts);
    assert.equal(typeof packed, "string");
    assert.match(packed as string, /^u32le:[A-Za-z0-9+/]+=*$/);
    assert.equal(Buffer.from((packed as string).slice(6), "base64").length, counts.length * 8);
    assert.deepEqual(unpackEvidence(packed), counts);
    assert.deepEqual(unpackEvidence(JSON.parse(JSON.stringify(packed))), counts, "survives the stored JSON");
  });

  test("is little-endian whatever the host: successes then trials, 32 bits each", () => {
    assert.equal(packEvidence([{ successes: 1, trials: 258 }]), `u32le:${Buffer.from([1, 0, 0, 0, 2, 1, 0, 0]).toString("base64")}`);
    assert.equal(packEvidence([]), "u32le:");
    assert.deepEqual(unpackEvidence("u32le:"), []);
  });

  test("counts that do not fit 32 bits, or are not whole and at least 0, are written as the pairs older records hold", () => {
    for (const odd of [0xffffffff, 2 ** 40, -1, 1.5, Number.NaN]) {
      const counts = [{ successes: 1, trials: 2 }, null, { successes: 0, trials: odd }];
      assert.deepEqual(packEvidence(counts), [[1, 2], null, [0, odd]]);
    }
  });

  test("older records' pairs are read as they are; anything else is refused", () => {
    assert.deepEqual(unpackEvidence([[3, 9], null]), [{ successes: 3, trials: 9 }, null]);
    assert.throws(() => unpackEvidence("AAAA" as never), /unreadable adaptive evidence/);
    assert.throws(() => unpackEvidence({} as never), /unreadable adaptive evidence/);
    assert.throws(() => unpackEvidence(`u32le:${Buffer.alloc(12).toString("base64")}`), /whole pairs/);
  });
});

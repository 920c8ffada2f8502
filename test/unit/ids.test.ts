import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { isUuid, newId } from "../../src/platform/ids.js";

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The 48-bit Unix millisecond timestamp at the front of a v7 id. */
function idMs(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

describe("ids", () => {
  test("are version 7 UUIDs of the RFC 9562 variant, stamped with the current millisecond", () => {
    const before = Date.now();
    const id = newId();
    const after = Date.now();
    assert.match(id, V7);
    assert.ok(isUuid(id));
    assert.ok(idMs(id) >= before && idMs(id) <= after + 1, `${idMs(id)} within [${before}, ${after}]`);
  });

  test("increase strictly in the order they are made, also many within one millisecond and across random-pool refills", () => {
    const ids = Array.from({ length: 50_000 }, () => newId());
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]} at ${i}`);
    assert.ok(ids.every((id) => V7.test(id)));
    const perMs = new Map<number, number>();
    for (const id of ids) perMs.set(idMs(id), (perMs.get(idMs(id)) ?? 0) + 1);
    assert.ok(Math.max(...perMs.values()) > 1, "some millisecond made more than one id");
  });

  test("differ in their random part, not only in the counter", () => {
    const tails = new Set(Array.from({ length: 2_000 }, () => newId().slice(-10)));
    assert.equal(tails.size, 2_000);
  });

  test("a returned id is not changed by the next one (the text buffer is reused)", () => {
    const first = newId();
    const copy = `${first}`;
    newId();
    assert.equal(first, copy);
  });
});

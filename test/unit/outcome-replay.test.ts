import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import canonicalize from "canonicalize";
import { RespondRequestSchema, RespondResponseSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { OutcomeReplay, canonicalPayload, defaultIdempotencyKey, hashPayload } from "../../src/decisions/outcome-replay.js";
import { encodeAnswer } from "../../src/platform/repeated-answers.js";
import { toOutcomeRecord } from "../../src/decisions/outcome-mapper.js";
import { createLogger } from "../../src/platform/logger.js";
import type { OutcomeRow } from "../../src/decisions/outcome-store.js";
import type { CompiledTenant } from "../../src/decisions/snapshot-compiler.js";

const requests = [
  create(RespondRequestSchema, { customerId: "c-1", outcome: "click", recommendationId: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", rank: 1, idempotencyKey: "k-1" }),
  create(RespondRequestSchema, {
    customerId: "c-2",
    outcome: "conversion",
    offerId: "o-1",
    context: { z: 1, a: [1, { y: 2, b: "x" }], "10": 3, "2": 4, nested: { "é": "u\u2028", "": null } },
    attributes: { age: 41, tier: "gold", score: 0.1 + 0.2, big: 1e21, small: 5e-7 },
    outcomeDetails: {},
    conversionValue: Number.NaN,
    responseTime: -0,
    timestamp: { seconds: 1700000000n, nanos: 5 },
  }),
];

describe("Respond's idempotency (src/decisions/outcome-replay.ts)", () => {
  test("the canonical payload is the text the canonicalize package wrote, so stored hashes and derived bulk keys do not change", () => {
    for (const req of requests) {
      const before = canonicalize(toJson(RespondRequestSchema, req))!;
      assert.equal(canonicalPayload(req), before);
      assert.equal(hashPayload(canonicalPayload(req)), createHash("sha256").update(before).digest("hex"));
      assert.equal(defaultIdempotencyKey(req), `bulk:${createHash("sha256").update(before).digest("hex")}`);
    }
  });

  test("replays of one key from memory give one answer, sent as the same bytes; one with another payload still warns each time", async () => {
    const warnings: unknown[] = [];
    const logger = Object.assign(createLogger("silent"), { warn: (...args: unknown[]) => void warnings.push(args) });
    const [original, other] = requests.map(canonicalPayload);
    const row = {
      id: "r-1", customer_id: "c-1", outcome: "click", idempotency_key: "k-1", payload_hash: hashPayload(original), offer_id: "o-1",
      direction: "inbound", context: { age: 41 }, outcome_details: {}, occurred_at: new Date(0), created_at: new Date(0),
    } as unknown as OutcomeRow;
    let reads = 0;
    const replay = new OutcomeReplay({ byKey: async () => (reads++, row) }, logger);
    const under = {} as CompiledTenant;
    // Read back from PostgreSQL (no payload): the first replay compares hashes, the ones after the text.
    const first = (await replay.find("t-1", "k-1", original, under))!;
    assert.equal(first.status, "already_recorded");
    assert.equal(first.id, "r-1");
    assert.deepEqual(first.context, { age: 41 });
    const again = replay.recall("t-1", "k-1", original, under)!;
    assert.deepEqual(again, first);
    assert.equal(encodeAnswer(RespondResponseSchema, again), encodeAnswer(RespondResponseSchema, first), "sent as the bytes kept");
    assert.deepEqual(new Uint8Array(encodeAnswer(RespondResponseSchema, again)), toBinary(RespondResponseSchema, first));
    assert.equal(reads, 1);
    assert.equal(warnings.length, 0);
    assert.deepEqual(replay.recall("t-1", "k-1", other, under), first, "the original record stands");
    assert.deepEqual(replay.recall("t-1", "k-1", other, under), first);
    assert.equal(warnings.length, 2);
    // Kept as this process answered it, with the payload that wrote it.
    const recorded = toOutcomeRecord({ ...row, idempotency_key: "k-2", payload_hash: "not compared" }, "recorded");
    replay.remember("t-1", "k-2", recorded, under, original);
    const replayed = replay.recall("t-1", "k-2", original, under)!;
    assert.deepEqual(replayed, { ...recorded, status: "already_recorded" });
    assert.equal(recorded.status, "recorded", "the answer given is not changed");
    const bytes = encodeAnswer(RespondResponseSchema, replayed);
    assert.deepEqual(new Uint8Array(bytes), toBinary(RespondResponseSchema, replayed));
    assert.equal(encodeAnswer(RespondResponseSchema, replay.recall("t-1", "k-2", original, under)!), bytes, "encoded once");
    assert.equal(warnings.length, 2);
    replay.recall("t-1", "k-2", other, under);
    assert.equal(warnings.length, 3);
    assert.equal(replay.recall("t-1", "k-1", original, {} as CompiledTenant), null, "kept under another snapshot");
  });

  test("after an erasure's message, the customer's records are answered but not kept, others' are", async () => {
    const rowOf = (customer: string, key: string) =>
      ({ id: `r-${key}`, customer_id: customer, outcome: "click", idempotency_key: key, payload_hash: hashPayload("{}"), offer_id: "o-1",
        direction: "inbound", context: {}, outcome_details: {}, occurred_at: new Date(0), created_at: new Date(0) }) as unknown as OutcomeRow;
    const replay = new OutcomeReplay({ byKey: async (_t, key) => rowOf(key.startsWith("erased") ? "c-erased" : "c-other", key) }, createLogger("silent"));
    const under = {} as CompiledTenant;
    replay.remember("t-1", "erased-1", toOutcomeRecord(rowOf("c-erased", "erased-1"), "recorded"), under, "{}");
    replay.forgetCustomer("t-1", "c-erased");
    assert.equal(replay.recall("t-1", "erased-1", "{}", under), null, "dropped");
    // A Respond recorded, or a read begun, before the erasure deleted the row, ending after its message.
    replay.remember("t-1", "erased-2", toOutcomeRecord(rowOf("c-erased", "erased-2"), "recorded"), under, "{}");
    assert.equal(replay.recall("t-1", "erased-2", "{}", under), null, "not kept");
    assert.equal((await replay.find("t-1", "erased-3", "{}", under))?.id, "r-erased-3", "a read back is still answered");
    assert.equal(replay.recall("t-1", "erased-3", "{}", under), null, "but not kept");
    replay.remember("t-1", "other-1", toOutcomeRecord(rowOf("c-other", "other-1"), "recorded"), under, "{}");
    assert.equal(replay.recall("t-1", "other-1", "{}", under)?.id, "r-other-1");
    replay.remember("t-2", "erased-4", toOutcomeRecord(rowOf("c-erased", "erased-4"), "recorded"), under, "{}");
    assert.equal(replay.recall("t-2", "erased-4", "{}", under)?.id, "r-erased-4", "the same id in another tenant is another customer");
  });

  test("a record kept under an older snapshot is read back once, and then answered from memory again", async () => {
    const row = {
      id: "r-1", customer_id: "c-1", outcome: "click", idempotency_key: "k-1", payload_hash: hashPayload("{}"), offer_id: "o-1",
      direction: "inbound", context: {}, outcome_details: {}, occurred_at: new Date(0), created_at: new Date(0),
    } as unknown as OutcomeRow;
    let reads = 0;
    const replay = new OutcomeReplay({ byKey: async () => (reads++, row) }, createLogger("silent"));
    const [before, after] = [{} as CompiledTenant, {} as CompiledTenant];
    replay.remember("t-1", "k-1", toOutcomeRecord(row, "recorded"), before, "{}");
    // A configuration change replaced the snapshot: the kept entry no longer answers.
    assert.equal(replay.recall("t-1", "k-1", "{}", after), null);
    assert.equal((await replay.find("t-1", "k-1", "{}", after))?.id, "r-1");
    assert.equal(replay.recall("t-1", "k-1", "{}", after)?.status, "already_recorded");
    assert.equal((await replay.find("t-1", "k-1", "{}", after))?.id, "r-1");
    assert.equal(reads, 1);
  });

  test("replaying more keys than are kept, in the order they were written, reads back only the ones dropped", async () => {
    const rows = new Map<string, OutcomeRow>();
    let reads = 0;
    // A budget of 1 MB: about 1,200 records of this size.
    const replay = new OutcomeReplay({ byKey: async (_t, key) => (reads++, rows.get(key) ?? null) }, createLogger("silent"), { writtenBytes: 1_000_000 });
    const under = {} as CompiledTenant;
    const payload = (n: number) => `{"n":${String(n).padStart(5, "0")}}`;
    const written = 2_000;
    for (let n = 0; n < written; n++) {
      const row = { id: `r-${n}`, customer_id: "c-1", outcome: "click", idempotency_key: `k-${n}`, payload_hash: hashPayload(payload(n)), offer_id: "o-1",
        direction: "inbound", context: {}, outcome_details: {}, occurred_at: new Date(0), created_at: new Date(0) } as unknown as OutcomeRow;
      rows.set(row.idempotency_key, row);
      replay.remember("t-1", row.idempotency_key, toOutcomeRecord(row, "recorded"), under, payload(n));
    }
    const kept = Math.floor(1_000_000 / (800 + 2 * payload(0).length));
    for (let n = 0; n < written; n++) {
      const answer = await replay.find("t-1", `k-${n}`, payload(n), under);
      assert.equal(answer?.id, `r-${n}`);
    }
    // With one map, each key read back evicted the next one due, and every replay was a read.
    assert.equal(reads, written - kept);
  });

  test("the records kept are bounded by their size, not their number: large contexts make fewer of them", async () => {
    const replay = new OutcomeReplay({ byKey: async () => null }, createLogger("silent"), { writtenBytes: 1_000_000 });
    const under = {} as CompiledTenant;
    const big = JSON.stringify({ context: { blob: "x".repeat(100_000) } });
    for (let n = 0; n < 20; n++) replay.remember("t-1", `k-${n}`, toOutcomeRecord({ id: `r-${n}`, customer_id: "c-1", idempotency_key: `k-${n}`, context: {}, outcome_details: {}, occurred_at: new Date(0), created_at: new Date(0) } as unknown as OutcomeRow, "recorded"), under, big);
    const answered = [];
    for (let n = 0; n < 20; n++) if (replay.recall("t-1", `k-${n}`, big, under)) answered.push(n);
    // Each counts about 200 KB: the last four fit in 1 MB.
    assert.deepEqual(answered, [16, 17, 18, 19]);
  });
});

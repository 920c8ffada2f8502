import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { RespondResponseSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { answeredRepeatedly, encodeAnswer } from "../../src/platform/repeated-answers.js";
import { OutcomeReplay } from "../../src/decisions/outcome-replay.js";
import { createLogger } from "../../src/platform/logger.js";
import type { OutcomeRow } from "../../src/decisions/outcome-store.js";
import type { CompiledTenant } from "../../src/decisions/snapshot-compiler.js";

const answer = () => create(RespondResponseSchema, { id: "r-1", status: "already_recorded", customerId: "c-1", outcome: "click", context: { age: 41, tier: "gold" } });

describe("answers given again and again (src/platform/repeated-answers.ts)", () => {
  test("an unmarked answer is encoded anew every time; a marked one once, to the same bytes", () => {
    const fresh = answer();
    const a = encodeAnswer(RespondResponseSchema, fresh);
    const b = encodeAnswer(RespondResponseSchema, fresh);
    assert.notEqual(a, b, "a fresh request's answer is not kept");
    assert.deepEqual(a, Buffer.from(toBinary(RespondResponseSchema, fresh)));

    const repeated = answeredRepeatedly(answer());
    const first = encodeAnswer(RespondResponseSchema, repeated);
    assert.equal(encodeAnswer(RespondResponseSchema, repeated), first);
    assert.deepEqual(first, Buffer.from(toBinary(RespondResponseSchema, repeated)));
  });

  test("replays of one key from memory share one answer; a replay with another payload still warns each time", async () => {
    const warnings: unknown[] = [];
    const logger = Object.assign(createLogger("silent"), { warn: (...args: unknown[]) => void warnings.push(args) });
    const replay = new OutcomeReplay({ byKey: async () => null }, logger);
    const under = {} as CompiledTenant;
    const row = {
      id: "r-1", customer_id: "c-1", outcome: "click", idempotency_key: "k-1", payload_hash: "h-1", offer_id: "o-1", direction: "inbound",
      context: { age: 41 }, outcome_details: {}, occurred_at: new Date(0), created_at: new Date(0),
    } as unknown as OutcomeRow;
    replay.remember("t-1", "k-1", row, under);
    const first = replay.recall("t-1", "k-1", "h-1", under)!;
    assert.equal(first.status, "already_recorded");
    assert.equal(first.id, "r-1");
    assert.equal(replay.recall("t-1", "k-1", "h-1", under), first);
    assert.equal(encodeAnswer(RespondResponseSchema, first), encodeAnswer(RespondResponseSchema, first));
    assert.equal(warnings.length, 0);
    assert.equal(replay.recall("t-1", "k-1", "h-2", under), first);
    assert.equal(replay.recall("t-1", "k-1", "h-2", under), first);
    assert.equal(warnings.length, 2);
    assert.equal(replay.recall("t-1", "k-1", "h-1", {} as CompiledTenant), null, "kept under another snapshot");
  });
});

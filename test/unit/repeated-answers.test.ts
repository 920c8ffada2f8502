import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { RespondResponseSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { answeredRepeatedly, encodeAnswer } from "../../src/platform/repeated-answers.js";

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
});

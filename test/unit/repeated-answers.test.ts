import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { RespondResponseSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { encodedAs, encodeAnswer } from "../../src/platform/repeated-answers.js";

const answer = () => create(RespondResponseSchema, { id: "r-1", status: "already_recorded", customerId: "c-1", outcome: "click", context: { age: 41, tier: "gold" } });

describe("answers given again and again (src/platform/repeated-answers.ts)", () => {
  test("an unregistered answer is encoded anew every time; a registered one is sent as its kept bytes", () => {
    const fresh = answer();
    const a = encodeAnswer(RespondResponseSchema, fresh);
    const b = encodeAnswer(RespondResponseSchema, fresh);
    assert.notEqual(a, b, "a fresh request's answer is not kept");
    assert.deepEqual(a, Buffer.from(toBinary(RespondResponseSchema, fresh)));

    const kept = Buffer.from(toBinary(RespondResponseSchema, answer()));
    const replayed = encodedAs(fromBinary(RespondResponseSchema, kept), kept);
    assert.equal(encodeAnswer(RespondResponseSchema, replayed), kept);
    assert.equal(encodeAnswer(RespondResponseSchema, encodedAs(fromBinary(RespondResponseSchema, kept), kept)), kept);
    assert.deepEqual(toBinary(RespondResponseSchema, replayed), new Uint8Array(kept));
  });
});

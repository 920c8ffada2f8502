import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { create, fromBinary, toBinary, type DescMessage, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { isAppError } from "../../src/platform/errors.js";
import { checkJsonNesting, screenRequest, SCREEN_LIMITS } from "../../src/transport/request-screen.js";
import { parseJsonBody, readBinary, readJson } from "../../src/transport/message-codec.js";
import { RecommendRequestSchema, RespondBulkRequestSchema, RespondRequestSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { CreativeWriteSchema, OfferService, OfferWriteSchema } from "../../gen/decisioning/v1/catalog_pb.js";
import { methodPolicy } from "../../src/platform/method-policy.js";
import { IngestEventsRequestSchema } from "../../gen/decisioning/v1/events_pb.js";

/** The screen's verdict on a message: the violations as `<field>: <message>`, or null when it passes. */
function verdict<D extends DescMessage>(schema: D, init: MessageInitShape<D>): { reason: string; message: string } | null {
  try {
    screenRequest(schema, create(schema, init));
    return null;
  } catch (err) {
    assert.ok(isAppError(err), String(err));
    assert.equal(err.code, "INVALID_ARGUMENT");
    return { reason: err.reason, message: err.message };
  }
}

const nested = (levels: number): JsonValue => {
  let v: JsonValue = 1;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};

describe("the request screen", () => {
  test("plausible requests pass, line breaks and tabs in text included", () => {
    assert.equal(verdict(RecommendRequestSchema, { customerId: "c-1", context: { page: "home", n: 3, deep: { list: [1, "x", null] } } }), null);
    assert.equal(verdict(OfferWriteSchema, { name: "Gold card", description: "line one\nline two\r\n\tindented", tags: ["a", "b"], margin: 12.5 }), null);
    assert.equal(verdict(RespondRequestSchema, { customerId: "é😀", outcome: "click", idempotencyKey: "k".repeat(SCREEN_LIMITS.maxStringChars) }), null);
  });

  test("NUL and other control characters are refused where they are, in fields and inside free JSON", () => {
    assert.deepEqual(verdict(RecommendRequestSchema, { customerId: "a\u0000b" }), {
      reason: "VALIDATION_FAILED",
      message: "customerId: must not contain control characters (U+0000 at 1)",
    });
    assert.match(verdict(RespondRequestSchema, { customerId: "c", idempotencyKey: "\u001b[31m" })!.message, /^idempotencyKey: .*U\+001B/);
    assert.match(verdict(OfferWriteSchema, { name: "x", tags: ["ok", "b\u007f"] })!.message, /^tags\[1\]: .*U\+007F/);
    assert.match(verdict(OfferWriteSchema, { name: "x", metadata: { outer: { inner: ["ok", "\u0085"] } } })!.message, /^metadata\.outer\.inner\[1\]: .*U\+0085/);
    assert.match(verdict(OfferWriteSchema, { name: "x", metadata: { "k\u0000": 1 } })!.message, /^metadata key: .*U\+0000/);
  });

  test("unpaired surrogates are refused (a binary message can carry one that JSON decoding would refuse)", () => {
    assert.match(verdict(RecommendRequestSchema, { customerId: "x", attributes: { name: "\ud800" } })!.message, /^attributes\.name: must be valid Unicode/);
    assert.match(verdict(RecommendRequestSchema, { customerId: "a\udc00" })!.message, /^customerId: must be valid Unicode/);
    assert.equal(verdict(RecommendRequestSchema, { customerId: "\ud83d\ude00" }), null, "a pair is one character");
  });

  test("strings over 10,000 characters are refused, unless the field declares more", () => {
    const long = "a".repeat(SCREEN_LIMITS.maxStringChars + 1);
    assert.equal(verdict(OfferWriteSchema, { name: "x", description: long })!.message, "description: must be at most 10000 characters");
    assert.equal(verdict(RecommendRequestSchema, { customerId: "c", context: { note: long } })!.message, "context.note: must be at most 10000 characters");
    assert.equal(verdict(CreativeWriteSchema, { name: "x", content: { html: long } }), null, "creative content holds up to (field).max_chars");
  });

  test("a Value field (held as its message, not as JSON) is named by the caller's path into it", () => {
    const long = "a".repeat(SCREEN_LIMITS.maxStringChars + 1);
    const events = fromBinary(
      IngestEventsRequestSchema,
      toBinary(IngestEventsRequestSchema, create(IngestEventsRequestSchema, {
        events: [{ eventType: "x" }, { eventType: "y", properties: { kind: { case: "structValue", value: { fields: {
          note: { kind: { case: "stringValue", value: long } },
          list: { kind: { case: "listValue", value: { values: [{ kind: { case: "numberValue", value: 1 } }, { kind: { case: "numberValue", value: Number.NaN } }] } } },
        } } } } }],
      })),
    );
    assert.throws(() => screenRequest(IngestEventsRequestSchema, events), (err: Error) => {
      assert.equal(err.message, "events[1].properties.note: must be at most 10000 characters; events[1].properties.list[1]: must be a finite number");
      return true;
    });
  });

  test("numbers: non-finite doubles anywhere, and whole numbers in free JSON beyond 2^53", () => {
    assert.equal(verdict(OfferWriteSchema, { name: "x", margin: Number.NaN })!.message, "margin: must be a finite number");
    assert.equal(verdict(OfferWriteSchema, { name: "x", revenueValue: Number.POSITIVE_INFINITY })!.message, "revenueValue: must be a finite number");
    assert.match(verdict(RecommendRequestSchema, { customerId: "c", context: { n: 2 ** 53 + 2 } })!.message, /^context\.n: must be a whole number within/);
    assert.equal(verdict(RecommendRequestSchema, { customerId: "c", context: { n: 2 ** 53 - 1, f: 123.456, tiny: 1e-300 } }), null);
  });

  test("timestamps outside 0001-01-01..9999-12-31, which only a binary message can carry", () => {
    const far = { seconds: 10n ** 15n, nanos: 0 };
    assert.match(verdict(RespondRequestSchema, { customerId: "c", timestamp: far })!.message, /^timestamp: must be from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z$/);
    assert.match(verdict(RespondRequestSchema, { customerId: "c", timestamp: { seconds: 0n, nanos: -1 } })!.message, /^timestamp: /);
    assert.equal(verdict(RespondRequestSchema, { customerId: "c", timestamp: { seconds: 253_402_300_799n, nanos: 999_999_999 } }), null);
  });

  test("free JSON nested deeper than 64 levels is NESTING_TOO_DEEP, raw or decoded", () => {
    assert.equal(verdict(RecommendRequestSchema, { customerId: "c", context: nested(SCREEN_LIMITS.maxNesting - 2) as never }), null);
    assert.deepEqual(verdict(RecommendRequestSchema, { customerId: "c", context: nested(SCREEN_LIMITS.maxNesting) as never }), {
      reason: "NESTING_TOO_DEEP",
      message: "context.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a: nests deeper than 64 levels",
    });
    // Raw JSON is checked before protobuf decodes it, iteratively: a million brackets do not overflow the stack.
    const million = `{"context":${"[".repeat(1_000_000)}${"]".repeat(1_000_000)}}`;
    assert.throws(() => readJson(RecommendRequestSchema, parseJsonBody(Buffer.from(million))), (err: unknown) => isAppError(err) && err.reason === "NESTING_TOO_DEEP" && err.message.startsWith("context:"));
    assert.doesNotThrow(() => checkJsonNesting(nested(SCREEN_LIMITS.maxNesting - 1)));
  });

  test("bodies that are not UTF-8 are MALFORMED_UTF8; binary strings that are not UTF-8 are MALFORMED_MESSAGE", () => {
    assert.throws(() => parseJsonBody(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d])), (err: unknown) => isAppError(err) && err.reason === "MALFORMED_UTF8");
    // Field 1 (customer_id), length 2, bytes C0 AF: an overlong encoding of "/".
    assert.throws(() => readBinary(RecommendRequestSchema, new Uint8Array([0x0a, 0x02, 0xc0, 0xaf])), (err: unknown) => isAppError(err) && err.reason === "MALFORMED_MESSAGE");
    const ok = toBinary(RecommendRequestSchema, create(RecommendRequestSchema, { customerId: "c" }));
    assert.equal(fromBinary(RecommendRequestSchema, ok).customerId, "c");
  });

  test("at most 20 fields are named in one answer", () => {
    const tags = Array.from({ length: 100 }, () => "\u0000");
    const message = verdict(OfferWriteSchema, { name: "x", tags })!.message;
    assert.equal(message.split("; ").length, 20);
  });

  test("a value of the wrong JSON type is named by its path inside nested messages and lists of them, every one at once", () => {
    const named = (json: JsonValue) => {
      try {
        readJson(RespondBulkRequestSchema, json);
      } catch (err) {
        assert.ok(isAppError(err), String(err));
        return err.message;
      }
      assert.fail("decoded");
    };
    assert.equal(
      named({ items: [{ customerId: "ok" }, { customerId: 7, rank: "one" }, "x"] }),
      "items[1].customerId: expected string, got 7; items[1].rank: expected number (int32), got \"one\"; items[2]: expected object, got \"x\"",
    );
    assert.match(named({ items: [{ context: [1] }] }), /^items\[0\]\.context: expected object, got /);
    assert.equal(
      named({ items: [{ timestamp: 12345 }, { timestamp: {} }] }),
      'items[0].timestamp: expected an RFC 3339 timestamp string such as "2026-01-31T12:00:00Z", got 12345; items[1].timestamp: expected an RFC 3339 timestamp string such as "2026-01-31T12:00:00Z", got object',
    );
    assert.equal(named({ items: [{ timestamp: "yesterday" }] }), "items[0].timestamp: invalid RFC 3339 string");
    assert.equal(named({ items: Array.from({ length: 30 }, () => ({ customerId: 1 })) }).split("; ").length, 20);
  });
});

describe("a method's accepted_fields (options.proto)", () => {
  test("PatchOffer reads only spec 4.3's fields: others are dropped unread, accepted ones stay strictly typed", () => {
    const accepted = methodPolicy(OfferService.method.patchOffer, 1_000_000).acceptedFields;
    assert.ok(accepted?.has("shortDesc") && accepted.has("short_desc") && accepted.has("group"), "JSON and proto names");
    const body = { id: "o", priority: 7, mandatory: "notbool", mandatoryReason: 7, mandatory_expires_at: "garbage", mandatoryApprovedBy: 5, version: "abc" };
    const message = readJson(OfferWriteSchema, body, accepted);
    assert.deepEqual([message.id, message.priority, message.mandatory, message.mandatoryReason, message.mandatoryExpiresAt], ["o", 7, undefined, undefined, undefined]);
    assert.throws(() => readJson(OfferWriteSchema, body), (err: unknown) => isAppError(err) && /^mandatory: /.test(err.message));
    assert.throws(() => readJson(OfferWriteSchema, { priority: "high", mandatory: "notbool" }, accepted), (err: unknown) => isAppError(err) && /^priority: [^;]*$/.test(err.message));
    assert.equal(methodPolicy(OfferService.method.updateOffer, 1_000_000).acceptedFields, null, "no list: every field");
  });
});

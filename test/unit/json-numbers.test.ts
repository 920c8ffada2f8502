import { test, describe } from "node:test";
import assert from "node:assert/strict";
import type { DescMessage, JsonValue } from "@bufbuild/protobuf";
import { isAppError } from "../../src/platform/errors.js";
import { refuseQuotedNumbers } from "../../src/transport/json-numbers.js";
import { RespondBulkRequestSchema } from "../../gen/decisioning/v1/decisions_pb.js";
import { OfferWriteSchema } from "../../gen/decisioning/v1/catalog_pb.js";
import { ImportReportSchema } from "../../gen/decisioning/v1/portability_pb.js";

/** The violations as `<field>: <message>`, or null when the body passes. */
function refused(schema: DescMessage, json: JsonValue, accepted?: ReadonlySet<string>): string | null {
  try {
    refuseQuotedNumbers(schema, json, accepted);
    return null;
  } catch (err) {
    assert.ok(isAppError(err), String(err));
    assert.equal(err.reason, "VALIDATION_FAILED");
    return err.message;
  }
}

describe("numbers sent as strings", () => {
  test("a 32-bit integer or a double sent as a string is named, by its path, every one at once", () => {
    assert.equal(refused(OfferWriteSchema, { name: "o", priority: "70", businessValue: "1.5" }), 'priority: expected number (int32), got "70"; businessValue: expected number (double), got "1.5"');
    const bulk = { items: [{ customerId: "c", rank: 2 }, { customerId: "c", rank: "2" }] };
    assert.equal(refused(RespondBulkRequestSchema, bulk), 'items[1].rank: expected number (int32), got "2"');
  });

  test("numbers, protobuf's float words, strings where strings belong, and free JSON pass", () => {
    assert.equal(refused(OfferWriteSchema, { name: "70", priority: 70, businessValue: 1.5, margin: "NaN", metadata: { n: "70" } }), null);
    assert.equal(refused(OfferWriteSchema, { name: "o", businessValue: "-Infinity" }), null);
  });

  test("the field's proto name is checked too, and a key the method does not accept is not read", () => {
    assert.match(refused(OfferWriteSchema, { name: "o", business_value: "2" }) ?? "", /^business_value: expected number \(double\)/);
    assert.equal(refused(OfferWriteSchema, { name: "o", priority: "70" }, new Set(["name"])), null);
  });

  test("map values are checked under their key", () => {
    assert.equal(refused(ImportReportSchema, { imported: { offers: 2, channels: "3" } }), 'imported.channels: expected number (int32), got "3"');
  });
});

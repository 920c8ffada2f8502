import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";

const root = join(import.meta.dirname, "../..");
const document = JSON.parse(readFileSync(join(root, "gen/openapi/openapi.json"), "utf8"));
const schemas = document.components.schemas;

// Freshness (gen/openapi/openapi.json is what the protos generate) is generated-code.test.ts's check.
test("the committed OpenAPI document is valid OpenAPI 3.1", async () => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(document));
  assert.equal(validator.version, "3.1");
  assert.deepEqual(result, { valid: true });
});

test("response schemas follow what the REST door writes: nullable as null, omit_empty not required, response_body bare", () => {
  const offer = schemas["decisioning.v1.Offer"];
  assert.ok(offer.required.includes("deletedAt"), "a nullable field is always written");
  assert.deepEqual(offer.properties.deletedAt, { anyOf: [{ type: "string", format: "date-time" }, { type: "null" }] });
  assert.ok(offer.properties.group, "json_name is the property name");
  const recommend = schemas["decisioning.v1.RecommendResponse"];
  assert.ok(!recommend.required.includes("rejectedOffers"), "omit_empty lists are left out when empty");
  assert.match(recommend.properties.rejectedOffers.description, /`explain` is true/);
  const alerts = document.paths["/api/v1/alerts"];
  assert.deepEqual(alerts.get.responses["200"].content["application/json"].schema, {
    type: "array",
    items: { $ref: "#/components/schemas/decisioning.v1.AlertRule" },
  });
  assert.equal(alerts.post.responses["201"].description, "Success");
  assert.equal(document.paths["/api/v1/alerts/{id}"].delete.responses["204"].content, undefined);
  // Spec 7: DELETE /offers/{id} is 204 without a body; the collection DELETE /offers?id= keeps 200 with `cascaded` (spec 4.3).
  const removeOffer = document.paths["/api/v1/offers/{id}"].delete.responses;
  assert.deepEqual([removeOffer["200"], removeOffer["204"].content], [undefined, undefined]);
  assert.deepEqual(document.paths["/api/v1/offers"].delete.responses["200"].content["application/json"].schema, { $ref: "#/components/schemas/decisioning.v1.DeleteResponse" });
});

test("spec 7: every REST DELETE answers 204 without a body, but the offers collection (4.3) and the GDPR erasure (4.13)", () => {
  const keepTheirBody: Record<string, string> = {
    "/api/v1/offers": "#/components/schemas/decisioning.v1.DeleteResponse",
    "/api/v1/export/full": "#/components/schemas/decisioning.v1.ErasureReport",
  };
  const deletes = Object.entries(document.paths as Record<string, any>).filter(([, item]) => item.delete);
  assert.ok(deletes.length >= 30, `${deletes.length} DELETE routes`);
  for (const [path, item] of deletes) {
    const success = Object.keys(item.delete.responses).filter((status) => status.startsWith("2"));
    if (keepTheirBody[path]) {
      assert.deepEqual(success, ["200"], path);
      assert.deepEqual(item.delete.responses["200"].content["application/json"].schema, { $ref: keepTheirBody[path] }, path);
    } else {
      assert.deepEqual(success, ["204"], path);
      assert.equal(item.delete.responses["204"].content, undefined, path);
    }
  }
  // One RPC, DeleteCatalogEntry, serves every catalog collection through additional_bindings: all of them say 204.
  for (const collection of ["categories", "sub-categories", "channels", "placements", "outcome-types", "qualification-rules", "decisioning-gates", "contact-policies", "guardrail-rules", "ranking-profiles", "cross-offer-constraints", "segments"]) {
    assert.ok(document.paths[`/api/v1/${collection}`].delete.responses["204"], collection);
  }
});

test("errors and credentials follow the method policy: plane, error shape, form bodies", () => {
  const token = document.paths["/api/v1/oauth/token"].post;
  assert.deepEqual(token.security, []);
  assert.equal(token.responses["4XX"].$ref, "#/components/responses/OAuthError");
  assert.deepEqual(Object.keys(token.requestBody.content), ["application/json", "application/x-www-form-urlencoded"]);
  const recommend = document.paths["/api/v1/recommend"].post;
  assert.equal(recommend["x-plane"], "data");
  assert.equal(recommend.responses["4XX"].$ref, "#/components/responses/StructuredError");
  assert.equal(recommend.responses["429"].$ref, "#/components/responses/RateLimited");
  const offers = document.paths["/api/v1/offers"].get;
  assert.equal(offers.responses["4XX"].$ref, "#/components/responses/ProblemError");
  assert.equal(offers["x-min-role"], "viewer");
  assert.deepEqual(offers.security, [{ apiKey: [] }, { bearerToken: [] }]);
  assert.ok(offers.parameters.some((p: { name: string; in: string }) => p.name === "cursor" && p.in === "query"));
  const getOffer = document.paths["/api/v1/offers/{id}"].get;
  assert.deepEqual(getOffer.parameters.map((p: { name: string; in: string }) => [p.name, p.in]), [["id", "path"]]);
});

test("a body shows only the policy's accepted_fields: PUT /offers/{id} has no mandatory fields (spec 4.3)", () => {
  const patch = document.paths["/api/v1/offers/{id}"].put.requestBody.content["application/json"].schema.properties;
  for (const field of ["mandatory", "mandatoryReason", "mandatoryExpiresAt", "mandatoryApprovedBy", "id"]) assert.equal(patch[field], undefined, field);
  for (const field of ["name", "priority", "categoryId", "group", "metadata"]) assert.ok(patch[field], field);
  const update = schemas["decisioning.v1.OfferWrite"].properties;
  assert.ok(update.mandatory && update.mandatoryReason, "PUT /offers still takes them");
});

test("every $ref names a component that exists", () => {
  const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
  for (const ref of new Set(refs)) {
    const [, kind, name] = /#\/components\/([^/]+)\/([^"]+)"$/.exec(ref)!;
    assert.ok(document.components[kind]?.[name], `${ref} resolves`);
  }
});

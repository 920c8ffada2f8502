import {
  getOption,
  hasOption,
  ScalarType,
  type DescExtension,
  type DescField,
  type DescFile,
  type DescMessage,
  type DescMethod,
  type FileRegistry,
} from "@bufbuild/protobuf";
import { FeatureSet_FieldPresence } from "@bufbuild/protobuf/wkt";
import { getComments } from "@bufbuild/protoplugin";

/**
 * The OpenAPI 3.1 document of the REST door, derived from the descriptors alone: every method of
 * every service with a `google.api.http` rule, read the way src/transport/rest.ts serves it (path
 * variables, query parameters, body mapping, `response_body`) and the way message-codec.ts writes
 * its JSON (protobuf's JSON mapping with implicit values written, `(field).nullable` as null,
 * `(field).omit_empty` lists left out), with the method policy's success status, error shape,
 * credentials and limits. No list of services: a new annotated service appears by itself.
 */

type Schema = Record<string, unknown>;

/** What the generator reads of `google.api.HttpRule` and `(decisioning.v1.policy)`. */
interface HttpRule {
  pattern: { case: string | undefined; value?: unknown };
  body: string;
  responseBody: string;
  additionalBindings: HttpRule[];
}
interface MethodPolicy {
  plane: number;
  minRole: number;
  maxBodyBytes: number;
  httpStatus: number;
  acceptForm: boolean;
  rateLimit?: { bucket: string; limit: number; windowSeconds: number };
  errorFormat: number;
  acceptedFields: string[];
}
interface FieldPolicy {
  nullable: boolean;
  omitEmpty: boolean;
  keptWhen: string;
  endOfDay: boolean;
}

/** Which JSON a schema describes: what the server writes (fields it always writes are required) or what it reads. */
type Mode = "response" | "request";

const HTTP_BODY = "google.api.HttpBody";
/** options.proto's enums by number: Plane and Role, and ErrorFormat (0 derives from the plane). */
const PLANES = ["control", "control", "data", "public", "cron"];
const ROLES = ["viewer", "viewer", "editor", "admin"];
const ERROR_FORMATS = ["", "structured", "problem", "oauth"];
const DEFAULT_MAX_BODY_BYTES = 2_000_000;

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

function scalarSchema(type: ScalarType): Schema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    default:
      // protobuf JSON writes 64-bit integers as decimal strings, so that no digit is lost in JavaScript.
      return INT64.has(type) ? { type: "string", format: "int64", pattern: "^-?[0-9]+$" } : { type: "integer", format: "int32" };
  }
}

/** Well-known types have JSON forms of their own. `endOfDay`: a Timestamp ending an inclusive range. */
function wellKnownSchema(message: DescMessage, mode: Mode, endOfDay = false): Schema | undefined {
  switch (message.typeName) {
    case "google.protobuf.Timestamp":
      return mode === "response"
        ? { type: "string", format: "date-time" }
        : {
            type: "string",
            description: `ISO 8601: a zone-less time is UTC; a date alone is the ${endOfDay ? "last" : "first"} instant of that day.`,
          };
    case "google.protobuf.Duration":
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?s$" };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Comma-separated lowerCamelCase field paths." };
    case "google.protobuf.Struct":
      return { type: "object" };
    case "google.protobuf.ListValue":
      return { type: "array" };
    case "google.protobuf.Value":
      return {};
    case "google.protobuf.Empty":
      return { type: "object", additionalProperties: false };
    case "google.protobuf.Any":
      return { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"] };
  }
  if (message.typeName.startsWith("google.protobuf.") && message.typeName.endsWith("Value")) {
    const value = message.fields.find((f) => f.name === "value");
    if (value?.fieldKind === "scalar") return scalarSchema(value.scalar);
  }
  return undefined;
}

function describe(desc: Parameters<typeof getComments>[0]): string | undefined {
  const text = getComments(desc).leading?.trim();
  return text ? text.replace(/\n /g, "\n") : undefined;
}

class SchemaBuilder {
  readonly components: Record<string, Schema> = {};
  /** Messages some response holds: a request-only message keeps its plain name. */
  private readonly inResponses = new Set<string>();

  constructor(private readonly fieldExt: DescExtension | undefined) {}

  fieldPolicy(field: DescField): FieldPolicy | undefined {
    return this.fieldExt && hasOption(field, this.fieldExt) ? (getOption(field, this.fieldExt) as unknown as FieldPolicy) : undefined;
  }

  /** What writeJson always writes: implicit-presence values, lists and maps (unless omit_empty), and nullable fields (as null when unset). */
  private alwaysWritten(field: DescField): boolean {
    const policy = this.fieldPolicy(field);
    if (policy?.nullable) return true;
    if (field.fieldKind === "list" || field.fieldKind === "map") return !policy?.omitEmpty;
    return field.presence === FeatureSet_FieldPresence.IMPLICIT && field.oneof === undefined;
  }

  markResponse(message: DescMessage): void {
    if (this.inResponses.has(message.typeName) || wellKnownSchema(message, "response")) return;
    this.inResponses.add(message.typeName);
    for (const f of message.fields) if (f.message) this.markResponse(f.message);
  }

  /** A `$ref` to the message's component, built on first use. */
  ref(message: DescMessage, mode: Mode, field?: DescField): Schema {
    const wkt = wellKnownSchema(message, mode, field && this.fieldPolicy(field)?.endOfDay);
    if (wkt) return wkt;
    const name = mode === "request" && this.inResponses.has(message.typeName) ? `${message.typeName}.input` : message.typeName;
    if (!this.components[name]) {
      this.components[name] = {}; // before the fields, so that a recursive message refers to itself
      this.components[name] = this.messageSchema(message, mode);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  messageSchema(message: DescMessage, mode: Mode, omit: ReadonlySet<string> = new Set()): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const field of message.fields) {
      if (omit.has(field.name)) continue;
      properties[field.jsonName] = this.fieldSchema(field, mode);
      if (mode === "response" && this.alwaysWritten(field)) required.push(field.jsonName);
    }
    const schema: Schema = { type: "object", properties };
    const description = describe(message);
    if (description) schema.description = description;
    if (required.length) schema.required = required;
    // Members of a oneof are written flat; at most one of them is present.
    const exclusive = message.oneofs.flatMap((o) =>
      o.fields.flatMap((a, i) => o.fields.slice(i + 1).map((b) => ({ required: [a.jsonName, b.jsonName] }))),
    );
    if (exclusive.length) schema.not = { anyOf: exclusive };
    return schema;
  }

  /** One value of the field: the field itself, or an element of its list or map. */
  private valueSchema(field: DescField, kind: "scalar" | "enum" | "message", mode: Mode): Schema {
    if (kind === "scalar") return scalarSchema(field.scalar!);
    if (kind === "enum") return { type: "string", enum: field.enum!.values.map((v) => v.name) };
    return this.ref(field.message!, mode, field);
  }

  fieldSchema(field: DescField, mode: Mode): Schema {
    let schema: Schema =
      field.fieldKind === "list"
        ? { type: "array", items: this.valueSchema(field, field.listKind, mode) }
        : field.fieldKind === "map"
          ? { type: "object", additionalProperties: this.valueSchema(field, field.mapKind, mode) }
          : this.valueSchema(field, field.fieldKind, mode);
    const policy = this.fieldPolicy(field);
    if (mode === "response" && policy?.nullable) schema = { anyOf: [schema, { type: "null" }] };
    if (mode === "request" && field.fieldKind === "message" && field.message.typeName !== "google.protobuf.Value") {
      // protobuf JSON reads null as "unset"; on an update, a nullable field sent as null is cleared.
      schema = { anyOf: [schema, { type: "null" }] };
    }
    const notes = [describe(field)];
    if (policy?.omitEmpty) notes.push(policy.keptWhen ? `Left out when empty, unless the request's \`${policy.keptWhen}\` is true.` : "Left out when empty.");
    const description = notes.filter(Boolean).join("\n\n");
    return description ? ("$ref" in schema ? { allOf: [schema], description } : { ...schema, description }) : schema;
  }
}

interface Binding {
  verb: string;
  template: string;
  body: string;
  responseBody: string;
}

function bindingsOf(rule: HttpRule): Binding[] {
  return [rule, ...rule.additionalBindings].flatMap((r) => {
    const { case: verb, value } = r.pattern;
    if (!verb || verb === "custom" || typeof value !== "string") return [];
    return [{ verb, template: value, body: r.body, responseBody: r.responseBody }];
  });
}

/** `/api/v1/offers/{id}` → OpenAPI path and its variables; `{collection=categories}` matches only `categories`, so it is a literal. */
function pathOf(template: string): { path: string; variables: string[] } {
  const variables: string[] = [];
  const path = template
    .split("/")
    .map((s) => {
      const m = /^\{([a-z_][a-z0-9_.]*)(?:=([^*{}/]+|\*))?\}$/i.exec(s);
      if (!m) return s;
      if (m[2] && m[2] !== "*") return m[2];
      variables.push(m[1]);
      return `{${m[1]}}`;
    })
    .join("/");
  return { path, variables };
}

function fieldNamed(message: DescMessage, name: string): DescField | undefined {
  return message.fields.find((f) => f.name === name || f.jsonName === name);
}

/** Query parameters as rest.ts reads them: scalars, lists of scalars, well-known string types, and dotted paths into singular messages. */
function queryParameters(message: DescMessage, builder: SchemaBuilder, skip: ReadonlySet<string>, prefix = "", seen = new Set<string>()): Schema[] {
  if (seen.has(message.typeName)) return [];
  const out: Schema[] = [];
  for (const field of message.fields) {
    if (skip.has(field.name)) continue;
    const name = prefix + field.jsonName;
    const param = (schema: Schema, extra: Schema = {}): Schema => {
      const p: Schema = { name, in: "query", schema, ...extra };
      const description = describe(field);
      if (description) p.description = description;
      return p;
    };
    if (field.fieldKind === "scalar" || field.fieldKind === "enum") out.push(param(builder.fieldSchema(field, "request")));
    else if (field.fieldKind === "list" && field.listKind !== "message") out.push(param(builder.fieldSchema(field, "request"), { style: "form", explode: true }));
    else if (field.fieldKind === "message") {
      const wkt = wellKnownSchema(field.message, "request", builder.fieldPolicy(field)?.endOfDay);
      if (wkt) {
        if (wkt.type === "string" || field.message.typeName === "google.protobuf.Value") out.push(param(wkt));
      } else out.push(...queryParameters(field.message, builder, new Set(), `${name}.`, new Set([...seen, message.typeName])));
    }
  }
  return out;
}

const ERROR_RESPONSES: Record<string, Schema> = {
  structured: { $ref: "#/components/responses/StructuredError" },
  problem: { $ref: "#/components/responses/ProblemError" },
  oauth: { $ref: "#/components/responses/OAuthError" },
};

function securityOf(plane: string): Schema[] {
  if (plane === "public") return [];
  if (plane === "cron") return [{ cronSecret: [] }];
  return [{ apiKey: [] }, { bearerToken: [] }];
}

function operation(method: DescMethod, binding: Binding, index: number, builder: SchemaBuilder, policyExt: DescExtension): Schema {
  const policy = getOption(method, policyExt) as unknown as MethodPolicy;
  const plane = PLANES[policy.plane] ?? "control";
  const errorFormat = ERROR_FORMATS[policy.errorFormat] || (plane === "data" ? "structured" : "problem");
  const { variables } = pathOf(binding.template);
  const input = method.input;
  const parameters: Schema[] = variables.map((v) => {
    const field = fieldNamed(input, v);
    return { name: v, in: "path", required: true, schema: field ? builder.fieldSchema(field, "request") : { type: "string" } };
  });
  // Fields outside the policy's accepted_fields are dropped unread (message-codec.ts readJson): not shown.
  const accepted = policy.acceptedFields.length ? new Set(policy.acceptedFields) : null;
  const ignored = input.fields.filter((f) => accepted && !accepted.has(f.name)).map((f) => f.name);
  // Path variables are not body fields or query parameters, and neither are ignored fields.
  const omitted = new Set([...variables.map((v) => fieldNamed(input, v)?.name ?? v), ...ignored]);
  const op: Schema = {
    operationId: `${method.parent.name}_${method.name}${index ? `_${index + 1}` : ""}`,
    summary: `${method.parent.name}.${method.name}`,
    tags: [method.parent.name],
  };
  const description = describe(method);
  if (description) op.description = description;

  let requestBody: Schema | undefined;
  if (binding.body === "*") {
    if (input.typeName === HTTP_BODY) requestBody = { content: { "*/*": { schema: {} } } };
    else {
      const schema = omitted.size ? builder.messageSchema(input, "request", omitted) : builder.ref(input, "request");
      requestBody = jsonBody(schema, policy.acceptForm);
    }
  } else if (binding.body) {
    const field = fieldNamed(input, binding.body);
    if (field?.fieldKind === "message" && field.message.typeName === HTTP_BODY) requestBody = { content: { "*/*": { schema: {} } } };
    else if (field) {
      let schema = builder.fieldSchema(field, "request");
      // rest.ts takes one element where the body maps to a list (POST /events: one object or an array).
      if (field.fieldKind === "list") schema = { anyOf: [schema.items as Schema, schema] };
      requestBody = jsonBody(schema, policy.acceptForm);
    }
    parameters.push(...queryParameters(input, builder, new Set([...omitted, field?.name ?? binding.body])));
  } else parameters.push(...queryParameters(input, builder, omitted));
  if (parameters.length) op.parameters = parameters;
  if (requestBody) op.requestBody = requestBody;

  const status = String(policy.httpStatus || 200);
  const responses: Record<string, Schema> = {};
  if (method.output.typeName === HTTP_BODY) {
    responses[status] = {
      description: "A file, in the media type it names; with Content-Disposition: attachment when it carries a file name.",
      headers: successHeaders(),
      content: { "*/*": { schema: {} } },
    };
  } else if (status === "204") {
    responses[status] = { description: "No Content", headers: successHeaders() };
  } else {
    const field = binding.responseBody ? fieldNamed(method.output, binding.responseBody) : undefined;
    const schema = field ? builder.fieldSchema(field, "response") : builder.ref(method.output, "response");
    responses[status] = { description: "Success", headers: successHeaders(), content: { "application/json": { schema } } };
  }
  if (errorFormat !== "oauth") responses["429"] = { $ref: "#/components/responses/RateLimited" };
  responses["4XX"] = ERROR_RESPONSES[errorFormat];
  responses["5XX"] = ERROR_RESPONSES[errorFormat];
  op.responses = responses;
  op.security = securityOf(plane);
  op["x-plane"] = plane;
  if (plane === "control") op["x-min-role"] = ROLES[policy.minRole] ?? "viewer";
  op["x-max-body-bytes"] = policy.maxBodyBytes || DEFAULT_MAX_BODY_BYTES;
  if (policy.rateLimit) {
    op["x-rate-limit"] = { bucket: policy.rateLimit.bucket, limit: policy.rateLimit.limit, windowSeconds: policy.rateLimit.windowSeconds };
  }
  return op;
}

function jsonBody(schema: Schema, acceptForm: boolean): Schema {
  const content: Schema = { "application/json": { schema } };
  if (acceptForm) content["application/x-www-form-urlencoded"] = { schema };
  return { content };
}

function successHeaders(): Schema {
  return {
    "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
    "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
    "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
  };
}

/** Spec 7's error bodies, as error-mapping.ts writes them. */
const ERROR_SCHEMAS: Record<string, Schema> = {
  StructuredError: {
    type: "object",
    description: "Data-plane errors (spec 7, shape 1).",
    required: ["error"],
    properties: {
      error: {
        type: "object",
        required: ["code", "reason", "message", "status", "recommendationId", "timestamp", "requestId"],
        properties: {
          code: { type: "string", description: "The HTTP status as a constant name, e.g. BAD_REQUEST (docs/errors.md)." },
          reason: { type: "string", description: "Stable reason, also in the X-Error-Reason header." },
          message: { type: "string" },
          status: { type: "integer" },
          recommendationId: { type: ["string", "null"] },
          timestamp: { type: "string", format: "date-time" },
          requestId: { type: "string" },
        },
      },
    },
  },
  ProblemError: {
    type: "object",
    description: "Control-plane errors (spec 7, shape 2). Validation errors join field messages as `<field>: <message>; ...` in detail and list them in errors.",
    required: ["title", "detail", "status", "reason", "requestId"],
    properties: {
      title: { type: "string" },
      detail: { type: "string" },
      status: { type: "integer" },
      reason: { type: "string", description: "Stable reason, also in the X-Error-Reason header." },
      requestId: { type: "string" },
      errors: {
        type: "array",
        items: { type: "object", required: ["field", "message"], properties: { field: { type: "string" }, message: { type: "string" } } },
      },
    },
  },
  RateLimitError: {
    type: "object",
    description: "Any 429 but the token endpoint's (spec 7, shape 3).",
    required: ["error", "message"],
    properties: { error: { const: "Too Many Requests" }, retryAfter: { type: "integer" }, message: { type: "string" } },
  },
  OAuthError: {
    type: "object",
    description: "Token endpoint errors (spec 7, shape 4).",
    required: ["error", "error_description"],
    properties: {
      error: { type: "string", examples: ["invalid_request", "unsupported_grant_type", "invalid_client", "rate_limit_exceeded"] },
      error_description: { type: "string" },
      retryAfter: { type: "integer" },
    },
  },
};

function errorResponse(schema: string, description: string): Schema {
  return {
    description,
    headers: {
      "X-Error-Reason": { $ref: "#/components/headers/X-Error-Reason" },
      "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
      "Retry-After": { $ref: "#/components/headers/Retry-After" },
    },
    content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } },
  };
}

export interface OpenApiOptions {
  title: string;
  version: string;
}

/** The document for the services of `files` (the ones buf was asked to generate), resolved against `registry`. */
export function openApiDocument(registry: FileRegistry, files: DescFile[], options: OpenApiOptions): Schema {
  const httpExt = registry.getExtension("google.api.http");
  const policyExt = registry.getExtension("decisioning.v1.policy");
  if (!httpExt || !policyExt) throw new Error("the google.api.http and decisioning.v1.policy extensions must be among the inputs");
  const builder = new SchemaBuilder(registry.getExtension("decisioning.v1.field"));
  const services = files.flatMap((f) => f.services).map((service) => ({ service, methods: service.methods.filter((m) => hasOption(m, httpExt)) }));
  // Names first: a message some response holds is named for its response form, its request form gets `.input`.
  for (const { methods } of services) for (const m of methods) builder.markResponse(m.output);
  const paths: Record<string, Record<string, Schema>> = {};
  const tags: Schema[] = [];
  for (const { service, methods } of services) {
    if (!methods.length) continue;
    const tag: Schema = { name: service.name };
    const description = describe(service);
    if (description) tag.description = description;
    tags.push(tag);
    for (const method of methods) {
      bindingsOf(getOption(method, httpExt) as unknown as HttpRule).forEach((binding, i) => {
        const { path } = pathOf(binding.template);
        const item = (paths[path] ??= {});
        if (item[binding.verb]) throw new Error(`${binding.verb.toUpperCase()} ${path} is bound twice (${method.parent.typeName}.${method.name})`);
        item[binding.verb] = operation(method, binding, i, builder, policyExt);
      });
    }
  }
  const sortedPaths = Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b)));
  const schemas = Object.fromEntries(Object.entries({ ...builder.components, ...ERROR_SCHEMAS }).sort(([a], [b]) => a.localeCompare(b)));
  return {
    openapi: "3.1.0",
    info: {
      title: options.title,
      version: options.version,
      description:
        "The REST door of the decisioning service, generated from the protobuf definitions (proto/) by src/openapi/protoc-gen-openapi.ts. " +
        "The same methods are served over gRPC and Connect (under /api/v1/<package.Service>/<Method>). JSON follows the protobuf JSON mapping: " +
        "lowerCamelCase names, 64-bit integers as strings, enums by name, timestamps as RFC 3339 strings.",
    },
    jsonSchemaDialect: "https://spec.openapis.org/oas/3.1/dialect/base",
    tags,
    paths: sortedPaths,
    components: {
      schemas,
      responses: {
        StructuredError: errorResponse("StructuredError", "Error (structured shape)."),
        ProblemError: errorResponse("ProblemError", "Error (problem shape)."),
        OAuthError: errorResponse("OAuthError", "Error (OAuth shape)."),
        RateLimited: {
          description: "Rate limited.",
          headers: {
            "Retry-After": { $ref: "#/components/headers/Retry-After" },
            "X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
            "X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
            "X-Request-Id": { $ref: "#/components/headers/X-Request-Id" },
          },
          content: { "application/json": { schema: { $ref: "#/components/schemas/RateLimitError" } } },
        },
      },
      headers: {
        "X-Request-Id": { description: "The request's id, as logged.", schema: { type: "string" } },
        "X-Error-Reason": { description: "The error's stable reason.", schema: { type: "string" } },
        "X-RateLimit-Limit": { description: "The window's limit.", schema: { type: "integer" } },
        "X-RateLimit-Remaining": { description: "Calls left in the window.", schema: { type: "integer" } },
        "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer" } },
      },
      securitySchemes: {
        apiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "An API key (krn_...), or the internal key with X-Tenant-Id." },
        bearerToken: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "An access token from POST /api/v1/oauth/token." },
        cronSecret: { type: "http", scheme: "bearer", description: "CRON_SECRET, on the cron routes only." },
      },
    },
  };
}

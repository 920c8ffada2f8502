import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { fromJson, getOption, ScalarType, toBinary, type DescField, type DescMessage, type DescMethod, type JsonValue } from "@bufbuild/protobuf";
import { http as httpExt } from "../../gen/google/api/annotations_pb.js";
import { methodPolicy } from "../../src/platform/method-policy.js";
import { startTestService, type TestService } from "../support/service.js";
import { startChildService, type ChildService } from "../support/child-service.js";
import { rest } from "../support/clients.js";

/**
 * Hostile requests, generated from the served methods' descriptors, against two service processes on
 * one database: every route of every `google.api.http` annotation on REST, every method on Connect
 * JSON and on native gRPC, so a new route is fuzzed without anyone listing it. No answer may be a
 * 5xx (or a gRPC INTERNAL, UNKNOWN or UNAVAILABLE), no connection may be reset, and the audit chain
 * must verify afterwards. FUZZ_SEED and FUZZ_RUNS reproduce or lengthen a run; a failure prints both.
 */
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);
/** Each stream stops here, passed, whatever it has run: the test must stay well under 90 s. */
const TIME_BUDGET_MS = Number(process.env.FUZZ_TIME_BUDGET_MS ?? 35_000);

let svc: TestService;
let child: ChildService;
let tenant: { tenantId: string; apiKey: string };
let foreign: { tenantId: string; apiKey: string };
/** Ids the service handed out (this tenant's and another's), so that generated paths name real rows too. */
const ids: string[] = [];

interface Target {
  baseUrl: string;
  grpc: grpc.Client;
}
let targets: Target[] = [];

interface Binding {
  verb: string;
  /** Segments: a literal, or a variable's field name. */
  segments: Array<{ literal: string } | { variable: string }>;
  body: string;
}
interface Route {
  method: DescMethod;
  service: string;
  bindings: Binding[];
  maxBodyBytes: number;
}

/** Every served method with its REST bindings, read from the annotations exactly as the transcoder reads them. */
function routesOf(svc: TestService): Route[] {
  return svc.running.services.registrations.flatMap(({ service }) =>
    service.methods.map((method) => {
      const rule = getOption(method, httpExt);
      const bindings = [rule, ...rule.additionalBindings]
        .filter((r) => r.pattern.case && r.pattern.case !== "custom")
        .map((r) => ({
          verb: r.pattern.case!.toUpperCase(),
          body: r.body,
          segments: (r.pattern.value as string).split("/").filter(Boolean).map((s) => {
            const m = /^\{([a-z_][a-z0-9_.]*)(?:=([^}]+))?\}$/i.exec(s);
            if (!m) return { literal: s };
            return m[2] && m[2] !== "*" ? { literal: m[2] } : { variable: m[1] };
          }),
        }));
      return { method, service: service.typeName, bindings, maxBodyBytes: methodPolicy(method, svc.config.defaultBodyLimitBytes).maxBodyBytes };
    }),
  );
}

// ------------------------------------------------------------------------------------------------
// Values: what a field may be sent, good and hostile
// ------------------------------------------------------------------------------------------------

/** A JSON token written as is (numbers JSON.stringify cannot produce, nesting built as text). */
class Raw {
  constructor(readonly text: string) {}
}
/** An id from the pool, resolved when the request is sent. */
class KnownId {
  constructor(readonly index: number) {}
}
type Value = JsonValue | Raw | KnownId | Value[] | { [key: string]: Value };

const resolveId = (v: KnownId) => (ids.length ? ids[v.index % ids.length] : randomUUID());

function jsonText(v: Value): string {
  if (v instanceof Raw) return v.text;
  if (v instanceof KnownId) return JSON.stringify(resolveId(v));
  if (Array.isArray(v)) return `[${v.map(jsonText).join(",")}]`;
  if (v !== null && typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${jsonText(x)}`).join(",")}}`;
  return JSON.stringify(v);
}

/** As a query or path string: the text a URL would carry for it. */
function plainText(v: Value): string {
  if (v instanceof Raw) return v.text;
  if (v instanceof KnownId) return resolveId(v);
  return typeof v === "string" ? v : jsonText(v);
}

/** Any UTF-16 code unit, lone surrogates and controls included. */
const anyUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 12 });
const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("\u0000", "a\u0000b", "fuzz\u0000", "\u0000\u0000") },
  { weight: 2, arbitrary: fc.constantFrom("\u0001\u001f", "\u007f", "\u0085", "a\u001bb", "\t\n\r") },
  { weight: 2, arbitrary: fc.constantFrom("\ud800", "x\udc00y", "\udbff\udbff") },
  { weight: 2, arbitrary: fc.constantFrom(10_000, 10_001, 12_000).map((n) => "a".repeat(n)) },
  { weight: 1, arbitrary: anyUnits },
  { weight: 1, arbitrary: fc.constantFrom("é😀", "%ZZ", "../..", "' OR 1=1 --", "", " ", "{}", "null") },
);

/** Usually nothing, sometimes the value: one hostile part in a request that is otherwise plausible. */
const sometimes = <T>(arb: fc.Arbitrary<T>) => fc.oneof({ weight: 1, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: arb });
const wordString = fc.constantFrom(
  "active", "draft", "paused", "inactive", "click", "conversion", "impression", "dismiss", "email", "web", "json", "csv", "soc2",
  "create", "update", "delete", "soft_delete", "verify_integrity", "client_credentials", "offer", "inbound", "outbound", "adaptive",
  "formula", "global", "day", "lifetime", "admin", "read", "write", "engagement", "fuzz",
);
const validString = fc.oneof(wordString, fc.string({ maxLength: 16 }), fc.nat().map((n) => new KnownId(n)), fc.nat().map((n) => `fuzz-${n}`));
const hostileNumber = fc.oneof(
  fc.constantFrom<Value>(0, -1, 1, 50, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, 1e308, -1e308, 0.5, "NaN", "Infinity", "-Infinity", "1e999", "12abc", ""),
  fc.constantFrom("9007199254740993", "1e400", "-0", "1E2", "99999999999999999999").map((t) => new Raw(t)),
  fc.integer(),
  fc.double(),
);
const timestamp = fc.constantFrom<Value>(
  "2025-01-01", "2025-01-01T00:00:00", "2025-01-01T00:00:00Z", "2030-06-01T12:00:00.123456789Z", "0000-01-01T00:00:00Z",
  "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "10000-01-01T00:00:00Z", "2025-13-45T99:99:99Z", "2025-01-01T00:00:00+25:00", "", 0, 1e20,
);
/** Free JSON, with deep nesting built as text beside small structures with hostile leaves. */
const freeJson: fc.Arbitrary<Value> = fc.oneof(
  fc.dictionary(fc.oneof(fc.string({ maxLength: 6 }), hostileString), fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostileString, hostileNumber), { maxKeys: 4 }) as fc.Arbitrary<Value>,
  fc.constantFrom(63, 64, 65, 100, 5000).map((n) => new Raw(`${'{"a":'.repeat(n)}1${"}".repeat(n)}`)),
  fc.constantFrom(65, 20_000).map((n) => new Raw(`{"deep":${"[".repeat(n)}${"]".repeat(n)}}`)),
);
const wrongType = fc.constantFrom<Value>(null, true, false, [], {}, [1, "a"], { a: 1 }, 3);

/**
 * Values come in two kinds: plausible ones, so that most requests get past validation into the
 * services and stores, and hostile ones. A generated body is plausible but for at most one field.
 */
type Kind = "plausible" | "hostile";

function scalarValue(type: ScalarType, kind: Kind): fc.Arbitrary<Value> {
  switch (type) {
    case ScalarType.STRING:
      return kind === "plausible" ? validString : fc.oneof({ weight: 4, arbitrary: hostileString }, { weight: 1, arbitrary: hostileNumber }, { weight: 1, arbitrary: wrongType });
    case ScalarType.BOOL:
      return kind === "plausible" ? fc.boolean() : fc.constantFrom<Value>("true", "yes", 1, null, {});
    case ScalarType.BYTES:
      return kind === "plausible" ? fc.constant<Value>("AAAA") : fc.oneof(fc.constantFrom<Value>("!!"), hostileString);
    default:
      return kind === "plausible" ? fc.integer({ min: 0, max: 100 }) : fc.oneof({ weight: 3, arbitrary: hostileNumber }, { weight: 1, arbitrary: wrongType }, { weight: 1, arbitrary: hostileString });
  }
}

const plausibleJson = fc.dictionary(fc.constantFrom("page", "device", "tier", "age", "tags", "score"), fc.oneof(wordString, fc.integer({ min: 0, max: 100 }), fc.boolean()), { maxKeys: 3 }) as fc.Arbitrary<Value>;
const futureTime = fc.constantFrom<Value>("2031-01-01T00:00:00Z", "2030-06-01", "2030-06-01T12:00:00");

function messageValue(message: DescMessage, depth: number, kind: Kind): fc.Arbitrary<Value> {
  switch (message.typeName) {
    case "google.protobuf.Struct":
    case "google.protobuf.Value":
    case "google.protobuf.ListValue":
      return kind === "plausible" ? plausibleJson : fc.oneof({ weight: 4, arbitrary: freeJson }, { weight: 1, arbitrary: wrongType });
    case "google.protobuf.Timestamp":
      return kind === "plausible" ? futureTime : fc.oneof({ weight: 4, arbitrary: timestamp }, { weight: 1, arbitrary: hostileString }, { weight: 1, arbitrary: wrongType });
    case "google.protobuf.FieldMask":
      return kind === "plausible" ? fc.constant<Value>("name") : fc.constantFrom<Value>("", "nope,\u0000", 5);
    default:
      if (depth > 3) return kind === "plausible" ? fc.constant<Value>({}) : wrongType;
      return kind === "plausible" ? objectOf(message, depth + 1) : fc.oneof(objectOf(message, depth + 1), wrongType);
  }
}

function fieldValue(field: DescField, depth: number, kind: Kind): fc.Arbitrary<Value> {
  switch (field.fieldKind) {
    case "scalar":
      return scalarValue(field.scalar, kind);
    case "enum":
      return kind === "plausible" ? fc.constantFrom<Value>(...field.enum.values.map((v) => v.name)) : fc.constantFrom<Value>(99, "NOPE");
    case "message":
      return messageValue(field.message, depth, kind);
    case "list": {
      const item = (k: Kind) => (field.listKind === "scalar" ? scalarValue(field.scalar, k) : field.listKind === "message" ? messageValue(field.message, depth, k) : fc.constant<Value>(0));
      if (kind === "plausible") return fc.array(item("plausible"), { maxLength: 3 });
      // One bad item among good ones, or a single value where a list belongs.
      return fc.oneof(fc.tuple(fc.array(item("plausible"), { maxLength: 2 }), item("hostile")).map(([good, bad]) => [...good, bad]), item("hostile"));
    }
    case "map":
      return kind === "plausible" ? plausibleJson : freeJson;
  }
}

/** The key a field is sent under: mostly its JSON name, sometimes its proto name (protobuf JSON reads both). */
const keyOf = (f: DescField, depth: number) => (depth === 0 && f.name !== f.jsonName && f.number % 3 === 0 ? f.name : f.jsonName);

/** Some of a message's fields with plausible values, and usually one of them (or an unknown key) hostile. */
function objectOf(message: DescMessage, depth = 0): fc.Arbitrary<Record<string, Value>> {
  const shape: Record<string, fc.Arbitrary<Value>> = {};
  for (const f of message.fields) shape[keyOf(f, depth)] = fieldValue(f, depth, "plausible");
  const plausible = fc.record(shape, { requiredKeys: [] }) as fc.Arbitrary<Record<string, Value>>;
  if (!message.fields.length) return plausible;
  const poison = fc.constantFrom(...message.fields).chain((f) => fieldValue(f, depth, "hostile").map((v) => [keyOf(f, depth), v] as const));
  return fc.tuple(plausible, sometimes(poison)).map(([obj, bad]) => (bad ? { ...obj, [bad[0]]: bad[1] } : obj));
}

// ------------------------------------------------------------------------------------------------
// Requests
// ------------------------------------------------------------------------------------------------

type Auth = "admin" | "none" | "bogus" | "foreign";
const auth = fc.oneof({ weight: 12, arbitrary: fc.constant<Auth>("admin") }, { weight: 1, arbitrary: fc.constantFrom<Auth>("none", "bogus", "foreign") });

const pathSegment = fc.oneof(
  { weight: 12, arbitrary: fc.nat().map((n) => new KnownId(n)) },
  { weight: 1, arbitrary: fc.constant<Value>("").map(() => randomUUID()) },
  { weight: 2, arbitrary: fc.constantFrom<Value>(new Raw("%ZZ"), new Raw("%C0%AF"), new Raw("%00"), new Raw("%FF"), new Raw("%E2%82"), new Raw("%ED%A0%80"), new Raw("a%2Fb"), new Raw("%252e"), "not-a-uuid", "x".repeat(300), "..") },
  { weight: 1, arbitrary: hostileString },
);

/**
 * Query parameters: fields of the request (or not) with plausible values, and sometimes one that is
 * hostile in value or in form: given twice, as `name[]`, or badly percent-encoded.
 */
function queryParams(message: DescMessage): fc.Arbitrary<string[]> {
  const names = [...message.fields.map((f) => f.jsonName), "unknown"];
  const plausible = fc.array(
    fc.tuple(fc.constantFrom(...names), fc.oneof(scalarValue(ScalarType.STRING, "plausible"), fc.constantFrom<Value>("true", "10", "2030-01-01"))).map(([name, value]) => `${name}=${encode(plainText(value))}`),
    { maxLength: 3 },
  );
  const hostile = fc
    .tuple(fc.constantFrom(...names), fc.oneof(scalarValue(ScalarType.STRING, "hostile"), timestamp, fc.constantFrom<Value>("-1", "1000000")), fc.constantFrom("value", "twice", "brackets", "bad-value", "bad-name"))
    .map(([name, value, shape]) => {
      const v = encode(plainText(value));
      switch (shape) {
        case "twice":
          return [`${name}=${v}`, `${name}=${v}x`];
        case "brackets":
          return [`${name}[]=${v}`];
        case "bad-value":
          return [`${name}=%C0%AF${v}`];
        case "bad-name":
          return [`${name}%ZZ=${v}`];
        default:
          return [`${name}=${v}`];
      }
    });
  return fc.tuple(plausible, fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: hostile })).map(([good, bad]) => [...good, ...(bad ?? [])]);
}

/** Percent-encodes what can be encoded; a lone surrogate (which encodeURIComponent refuses) goes as its invalid UTF-8. */
function encode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\ud800-\udfff]/g, "%ED%A0%80").replace(/[^A-Za-z0-9%._~-]/g, (c) => (c.length ? encodeURIComponent(c) : ""));
  }
}

type Body =
  | { kind: "object"; value: Record<string, Value> }
  | { kind: "text"; text: string }
  | { kind: "bytes"; bytes: number[] }
  | { kind: "oversize" };

function bodyOf(message: DescMessage): fc.Arbitrary<Body> {
  return fc.oneof(
    { weight: 16, arbitrary: objectOf(message).map((value) => ({ kind: "object" as const, value })) },
    { weight: 2, arbitrary: fc.constantFrom("", "{", "null", "[]", '"x"', "123", '{"a":1,"a":2}', "\u0000", `{"x":${"[".repeat(70)}${"]".repeat(70)}}`).map((text) => ({ kind: "text" as const, text })) },
    { weight: 1, arbitrary: fc.constantFrom([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc0, 0xaf, 0x22, 0x7d], [0xff, 0xfe], [0x7b, 0x7d, 0x80]).map((bytes) => ({ kind: "bytes" as const, bytes: [...bytes] })) },
    { weight: 1, arbitrary: fc.constant({ kind: "oversize" as const }) },
  );
}

type Door = "rest" | "connect" | "grpc";
interface Case {
  target: number;
  door: Door;
  route: Route;
  binding: number;
  auth: Auth;
  path: Value[];
  query: string[];
  body: Body;
  contentType: string | null;
  /** gRPC only: set a double to NaN or a timestamp past 9999 after encoding what JSON could say. */
  binaryTwist: "none" | "nan" | "far-timestamp" | "random-bytes" | "bad-utf8";
}

function caseFor(route: Route, target: number): fc.Arbitrary<Case> {
  return fc.record({
    target: fc.constant(target),
    door: route.bindings.length ? fc.oneof({ weight: 6, arbitrary: fc.constant<Door>("rest") }, { weight: 3, arbitrary: fc.constant<Door>("connect") }, { weight: 2, arbitrary: fc.constant<Door>("grpc") }) : fc.constantFrom<Door>("connect", "grpc"),
    route: fc.constant(route),
    binding: fc.nat(),
    auth,
    path: fc.array(pathSegment, { minLength: 3, maxLength: 3 }),
    query: route.bindings.some((b) => b.body) ? fc.oneof({ weight: 5, arbitrary: fc.constant<string[]>([]) }, { weight: 1, arbitrary: queryParams(route.method.input) }) : queryParams(route.method.input),
    body: bodyOf(route.method.input),
    contentType: fc.oneof({ weight: 10, arbitrary: fc.constant("application/json") }, { weight: 1, arbitrary: fc.constantFrom(null, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1") }),
    binaryTwist: fc.oneof({ weight: 6, arbitrary: fc.constant("none" as const) }, { weight: 1, arbitrary: fc.constantFrom("nan" as const, "far-timestamp" as const, "random-bytes" as const, "bad-utf8" as const) }),
  });
}

const oversize = new Map<number, Buffer>();
function bodyBytes(body: Body, limit: number): Buffer {
  switch (body.kind) {
    case "object":
      return Buffer.from(jsonText(body.value), "utf8");
    case "text":
      return Buffer.from(body.text, "utf8");
    case "bytes":
      return Buffer.from(body.bytes);
    case "oversize":
      if (!oversize.has(limit)) oversize.set(limit, Buffer.from(`{"name":"${"a".repeat(limit)}"}`));
      return oversize.get(limit)!;
  }
}

function headersFor(c: Case): Record<string, string> {
  const h: Record<string, string> = {};
  if (c.auth === "admin") h["x-api-key"] = tenant.apiKey;
  if (c.auth === "foreign") h["x-api-key"] = foreign.apiKey;
  if (c.auth === "bogus") h.authorization = "Bearer krn_not-a-token";
  if (c.contentType) h["content-type"] = c.contentType;
  return h;
}

interface Outcome {
  ok: boolean;
  summary: string;
}

async function sendHttp(c: Case): Promise<Outcome> {
  const target = targets[c.target];
  let method = "POST";
  let path: string;
  let bytes: Buffer | undefined;
  if (c.door === "rest") {
    const binding = c.route.bindings[c.binding % c.route.bindings.length];
    let i = 0;
    path = "/" + binding.segments.map((s) => ("literal" in s ? s.literal : pathText(c.path[i++ % c.path.length]))).join("/");
    method = binding.verb;
    if (c.query.length) path += `?${c.query.join("&")}`;
    if (binding.body && method !== "GET") bytes = bodyBytes(c.body, c.route.maxBodyBytes);
    else if (method === "DELETE" && c.body.kind === "text") bytes = Buffer.from(c.body.text);
  } else {
    path = `/api/v1/${c.route.service}/${c.route.method.name}`;
    bytes = bodyBytes(c.body, c.route.maxBodyBytes);
  }
  const res = await fetch(target.baseUrl + path, { method, headers: headersFor(c), body: bytes && new Uint8Array(bytes) });
  const text = await res.text();
  if (res.status >= 500) return { ok: false, summary: `${c.door} ${method} ${path.slice(0, 200)} body=${bytes?.subarray(0, 300).toString()} → ${res.status} ${text.slice(0, 300)}` };
  if (c.door === "rest" && res.status < 300 && text) collectId(text);
  return { ok: true, summary: "" };
}

function pathText(v: Value): string {
  return v instanceof Raw ? v.text : encode(plainText(v));
}

function collectId(text: string): void {
  try {
    const id = JSON.parse(text)?.id;
    if (typeof id === "string" && ids.length < 200 && !ids.includes(id)) ids.push(id);
  } catch {
    /* not JSON: a download */
  }
}

const BAD_GRPC = new Set([grpc.status.UNKNOWN, grpc.status.INTERNAL, grpc.status.UNAVAILABLE, grpc.status.DATA_LOSS, grpc.status.UNIMPLEMENTED]);

/** What JSON could say, encoded as binary; then, sometimes, what only binary can say. */
function grpcBytes(c: Case): Buffer {
  if (c.binaryTwist === "random-bytes") return Buffer.from(bodyBytes(c.body, 64).subarray(0, 64));
  if (c.binaryTwist === "bad-utf8") return Buffer.from([0x0a, 0x02, 0xc0, 0xaf]);
  const schema = c.route.method.input;
  let message;
  try {
    message = fromJson(schema, c.body.kind === "object" ? (JSON.parse(jsonText(c.body.value)) as JsonValue) : {}, { ignoreUnknownFields: true });
  } catch {
    message = fromJson(schema, {});
  }
  const record = message as unknown as Record<string, unknown>;
  for (const f of schema.fields) {
    if (c.binaryTwist === "nan" && f.fieldKind === "scalar" && (f.scalar === ScalarType.DOUBLE || f.scalar === ScalarType.FLOAT)) record[f.localName] = Number.NaN;
    if (c.binaryTwist === "far-timestamp" && f.fieldKind === "message" && f.message.typeName === "google.protobuf.Timestamp") {
      record[f.localName] = { $typeName: "google.protobuf.Timestamp", seconds: 10n ** 15n, nanos: 0 };
    }
  }
  try {
    return Buffer.from(toBinary(schema, message));
  } catch {
    return Buffer.alloc(0);
  }
}

function sendGrpc(c: Case): Promise<Outcome> {
  const target = targets[c.target];
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(headersFor(c))) if (k !== "content-type") metadata.set(k, v);
  const bytes = grpcBytes(c);
  const path = `/${c.route.service}/${c.route.method.name}`;
  return new Promise((resolve) => {
    target.grpc.makeUnaryRequest(path, (b: Buffer) => b, (b: Buffer) => b, bytes, metadata, { deadline: Date.now() + 10_000 }, (err) => {
      if (err && BAD_GRPC.has(err.code)) resolve({ ok: false, summary: `grpc ${path} twist=${c.binaryTwist} bytes=${bytes.toString("hex").slice(0, 200)} → ${grpc.status[err.code]} ${err.details}` });
      else resolve({ ok: true, summary: "" });
    });
  });
}

async function send(c: Case): Promise<Outcome> {
  try {
    return c.door === "grpc" ? await sendGrpc(c) : await sendHttp(c);
  } catch (err) {
    // A reset or refused connection is a failure like a 500.
    const cause = (err as { cause?: { code?: string } }).cause?.code ?? "";
    return { ok: false, summary: `${c.door} ${c.route.method.name}: ${(err as Error).message} ${cause}` };
  }
}

// ------------------------------------------------------------------------------------------------

before(async () => {
  svc = await startTestService();
  child = await startChildService(svc);
  const t = await svc.createTenant("fuzzed");
  const f = await svc.createTenant("foreign");
  tenant = t;
  foreign = f;
  // Thousands of requests in seconds: lift the tenants' windows so that requests reach the services.
  const roomy = { limit: 1_000_000, windowSeconds: 60 };
  for (const id of [t.tenantId, f.tenantId]) {
    await svc.running.services.identityStore.setTenantRateLimits(id, { default: roomy, offers: roomy, audit_export: roomy });
  }
  const made = async (key: string, path: string, body: unknown) => {
    const res = await rest(svc.baseUrl, "POST", path, { key, body });
    assert.ok(res.status < 300, `${path}: ${JSON.stringify(res.body)}`);
    ids.push(res.body.id);
    return res.body;
  };
  const category = await made(t.apiKey, "/api/v1/categories", { name: "fuzz-category" });
  await made(t.apiKey, "/api/v1/sub-categories", { name: "fuzz-sub", categoryId: category.id });
  const channel = await made(t.apiKey, "/api/v1/channels", { name: "fuzz-channel" });
  const placement = await made(t.apiKey, "/api/v1/placements", { name: "fuzz-placement", channelId: channel.id });
  const offer = await made(t.apiKey, "/api/v1/offers", { name: "fuzz-offer", status: "active", categoryId: category.id });
  await made(t.apiKey, "/api/v1/creatives", { offerId: offer.id, channelId: channel.id, placementId: placement.id, name: "fuzz-creative" });
  await made(f.apiKey, "/api/v1/offers", { name: "foreign-offer" });
  const rec = await rest(svc.baseUrl, "POST", "/api/v1/recommend", { key: t.apiKey, body: { customerId: "fuzz-customer" } });
  ids.push(rec.body.recommendationId, "fuzz-customer", t.tenantId);
  targets = [
    { baseUrl: svc.baseUrl, grpc: new grpc.Client(svc.grpcAddress, grpc.credentials.createInsecure()) },
    { baseUrl: child.baseUrl, grpc: new grpc.Client(child.grpcAddress, grpc.credentials.createInsecure()) },
  ];
});

after(async () => {
  for (const t of targets) t.grpc.close();
  await child?.stop();
  await svc?.stop();
});

test(`hostile requests on every route and door of two processes: no 5xx, no reset (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS})`, async () => {
  const routes = routesOf(svc);
  assert.ok(routes.length >= 60 && routes.some((r) => r.bindings.length > 1), "the routes come from the annotations");
  let failure = "";
  let sent = 0;
  const run = (target: number, seed: number) =>
    fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes).chain((route) => caseFor(route, target)), async (c) => {
        const outcome = await send(c);
        sent++;
        if (!outcome.ok) throw new Error((failure = outcome.summary));
      }),
      // One stream per process, in parallel. Without shrinking (the servers keep state), and within
      // a time budget, so that a loaded machine runs fewer requests rather than the suite running long.
      { seed, numRuns: Math.ceil(RUNS / 2), endOnFailure: true, interruptAfterTimeLimit: TIME_BUDGET_MS },
    );
  try {
    await Promise.all([run(0, SEED), run(1, SEED + 1)]);
  } catch (err) {
    const detail = (err as Error).message.replace(/Counterexample: .*/s, "").trim();
    throw new Error(`fuzz failed: reproduce with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}\n${failure}\n${detail.slice(0, 2000)}`);
  }
  assert.ok(sent >= Math.min(RUNS, 500), `only ${sent} requests ran within the time budget`);

  for (const { baseUrl } of targets) {
    assert.equal((await fetch(`${baseUrl}/healthz`)).status, 200, "both processes still serve");
    for (const key of [tenant.apiKey, foreign.apiKey]) {
      const verify = await rest(baseUrl, "GET", "/api/v1/audit-logs/verify", { key });
      assert.equal(verify.status, 200, JSON.stringify(verify.body));
      assert.equal(verify.body.intact, true, `the audit chain verifies after the run: ${JSON.stringify(verify.body)}`);
    }
  }
});

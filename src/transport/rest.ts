import type { IncomingMessage, ServerResponse } from "node:http";
import { create, equals, getOption, type DescField, type DescMessage, type DescMethod, type JsonValue, type Message } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import { FieldMaskSchema } from "@bufbuild/protobuf/wkt";
import { http as httpExt } from "../../gen/google/api/annotations_pb.js";
import { HttpBodySchema, type HttpBody } from "../../gen/google/api/httpbody_pb.js";
import { AppError, invalidField } from "../platform/errors.js";
import type { CallInfo } from "../platform/context.js";
import type { ResolvedPolicy } from "../platform/method-policy.js";
import { refuseQuotedNumbers } from "./json-numbers.js";
import { parseJsonBody, readJson, writeJson } from "./message-codec.js";
import { rateLimitHeaders, toAppError } from "./error-mapping.js";
import { httpCallInfo, isJsonMediaType, mediaType, readBody, sendError, sendHttpBody } from "./http-io.js";
import { requestIdOf, type Gateway } from "./gateway.js";
import { inRequestSpan } from "../platform/tracing.js";

/** A literal segment, a variable, or a variable bound to one literal (`{collection=categories}`). */
type Segment = { literal: string; variable?: string } | { variable: string; literal?: undefined };

interface Route {
  verb: string;
  segments: Segment[];
  /** "" (no body), "*" (every field not bound by the path), or one field name. */
  body: string;
  /** "" (the whole response message), or the one response field the REST answer is (`response_body`). */
  responseBody: string;
  method: DescMethod;
  literalCount: number;
}

/** `/api/v1/offers/{id}` → segments; `{field=*}` is accepted as `{field}`, `{field=word}` matches only `word`. */
function compileTemplate(template: string): Segment[] {
  return template
    .split("/")
    .filter(Boolean)
    .map((s) => {
      const m = /^\{([a-z_][a-z0-9_.]*)(?:=([^*{}/]+|\*))?\}$/i.exec(s);
      if (!m) return { literal: s };
      return m[2] && m[2] !== "*" ? { literal: m[2], variable: m[1] } : { variable: m[1] };
    });
}

function routesOf(method: DescMethod): Route[] {
  const rule = getOption(method, httpExt);
  const out: Route[] = [];
  for (const r of [rule, ...rule.additionalBindings]) {
    const p = r.pattern;
    if (!p.case || p.case === "custom") continue;
    const segments = compileTemplate(p.value);
    // A misspelt response_body fails at start-up, not on the first call.
    if (r.responseBody && !method.output.fields.some((f) => f.name === r.responseBody)) {
      throw new Error(`${method.parent.typeName}.${method.name}: response_body names no field ${r.responseBody}`);
    }
    out.push({
      verb: p.case.toUpperCase(),
      segments,
      body: r.body,
      responseBody: r.responseBody,
      method,
      literalCount: segments.filter((s) => "literal" in s).length,
    });
  }
  return out;
}

/** Path variables as sent (still percent-encoded): decoding them is the request's business, not routing's. */
function match(route: Route, parts: string[]): Record<string, string> | null {
  if (route.segments.length !== parts.length) return null;
  const vars: Record<string, string> = {};
  for (let i = 0; i < parts.length; i++) {
    const seg = route.segments[i];
    if (seg.literal !== undefined && seg.literal !== parts[i]) return null;
    if (seg.variable !== undefined) vars[seg.variable] = parts[i];
  }
  return vars;
}

/** Strict percent-decoding: a malformed escape or bytes that are not UTF-8 (`%ZZ`, `%C0%AF`) give null. */
function percentDecode(raw: string): string | null {
  try {
    return decodeURIComponent(raw);
  } catch {
    return null;
  }
}

/**
 * The query string read strictly, parameter by parameter: `+` is a space, and a parameter whose
 * name or value is not valid percent-encoded UTF-8 is refused rather than read with U+FFFD in it.
 */
function parseQuery(search: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of search.replace(/^\?/, "").split("&")) {
    if (!part) continue;
    const eq = part.indexOf("=");
    const [rawKey, rawValue] = eq < 0 ? [part, ""] : [part.slice(0, eq), part.slice(eq + 1)];
    const key = percentDecode(rawKey.replace(/\+/g, " "));
    const value = percentDecode(rawValue.replace(/\+/g, " "));
    if (key === null) throw invalidField("query", "a parameter name is not valid percent-encoded UTF-8");
    if (value === null) throw invalidField(key, "is not valid percent-encoded UTF-8");
    out.push([key, value]);
  }
  return out;
}

/**
 * Query parameters onto the request's JSON. A list field takes every occurrence (`placements=a&placements=b`,
 * or `placements[]=a`); a single-valued field named twice, or as a list (`limit[]=1`), is refused, since
 * picking one of the values would act on something the caller did not say.
 */
function queryJson(method: DescMethod, params: Array<[string, string]>): Record<string, JsonValue> {
  const grouped = new Map<DescField, { name: string; path: string[]; values: string[]; asList: boolean }>();
  for (const [key, value] of params) {
    const bracketed = /^(.+)\[\d*\]$/.exec(key);
    const name = bracketed ? bracketed[1] : key;
    const resolved = fieldPath(method.input, name);
    if (!resolved || resolved.field.fieldKind === "map") continue; // unknown parameters are ignored, like unknown JSON keys
    const entry = grouped.get(resolved.field) ?? { name, path: resolved.path, values: [], asList: false };
    entry.values.push(value);
    entry.asList ||= bracketed !== null;
    grouped.set(resolved.field, entry);
  }
  const json: Record<string, JsonValue> = {};
  for (const [field, { name, path, values, asList }] of grouped) {
    if (field.fieldKind !== "list" && (values.length > 1 || asList)) throw invalidField(name, "must be given once, as a single value");
    let target = json;
    for (const step of path.slice(0, -1)) target = (target[step] ??= {}) as Record<string, JsonValue>;
    target[path[path.length - 1]] = queryValue(field, values);
  }
  return json;
}

/**
 * A query name to its field: `limit`, or a dotted path into singular message fields as
 * google.api.http maps them (`hub.mode` is field `mode` of message field `hub`). Returns the JSON names on the way.
 */
function fieldPath(message: DescMessage, name: string): { field: DescField; path: string[] } | undefined {
  const path: string[] = [];
  let fields = message.fields;
  const steps = name.split(".");
  for (let i = 0; i < steps.length; i++) {
    const field = fields.find((f) => f.name === steps[i] || f.jsonName === steps[i]);
    if (!field) return undefined;
    path.push(field.jsonName);
    if (i === steps.length - 1) return { field, path };
    // Well-known types have JSON forms of their own (a Timestamp is a string): no paths into them.
    if (field.fieldKind !== "message" || field.message.typeName.startsWith("google.protobuf.")) return undefined;
    fields = field.message.fields;
  }
  return undefined;
}

function fieldByName(method: DescMethod, name: string): DescField | undefined {
  return method.input.fields.find((f) => f.name === name || f.jsonName === name);
}

/**
 * A method that takes google.api.HttpBody as its body (the whole request, or the field the rule
 * names) receives the bytes as sent, with their Content-Type: inbound webhooks sign the raw body.
 */
function rawBodyField(route: Route): "*" | DescField | null {
  if (route.body === "*") return route.method.input.typeName === HttpBodySchema.typeName ? "*" : null;
  const field = route.body ? fieldByName(route.method, route.body) : undefined;
  return field?.fieldKind === "message" && field.message.typeName === HttpBodySchema.typeName ? field : null;
}

/**
 * A body mapped to a list field takes one element as a one-item list, for routes whose spec body is
 * "one object or an array of them" (POST /events).
 */
function oneOrList(method: DescMethod, name: string, body: JsonValue): JsonValue {
  const field = fieldByName(method, name);
  return field?.fieldKind === "list" && !Array.isArray(body) ? [body] : body;
}

/**
 * With `body: "*"` the query still binds (`POST /restore?entityType=offer&id=…`, `DELETE
 * /export/full?customerId=…`). A field given in both must say the same in both: picking one would act
 * on something the caller did not say, as with a query parameter given twice. Equal values (compared
 * as protobuf values: `"10"` in the query is `10` in the body) are one value.
 */
function refuseConflicts(method: DescMethod, query: Record<string, JsonValue>, body: Record<string, JsonValue>): void {
  // Led by the query, which most requests (Recommend over REST among them) do not have.
  for (const key in query) {
    const field = fieldByName(method, key);
    if (!field) continue;
    for (const name of field.name === field.jsonName ? [field.jsonName] : [field.jsonName, field.name]) {
      if (!(name in body)) continue;
      const fromQuery = readJson(method.input, { [field.jsonName]: query[key] });
      const fromBody = readJson(method.input, { [field.jsonName]: body[name] });
      if (!equals(method.input, fromQuery, fromBody)) throw invalidField(field.jsonName, "is given in the query and in the body with different values; give it once");
    }
  }
}

/** Query values are strings; booleans need converting, everything else protobuf JSON accepts as text. */
function queryValue(field: DescField, values: string[]): JsonValue {
  const convert = (v: string): JsonValue =>
    (field.fieldKind === "scalar" || field.fieldKind === "list") && field.scalar === ScalarType.BOOL
      ? v === "true" ? true : v === "false" ? false : v
      : v;
  return field.fieldKind === "list" ? values.map(convert) : convert(values[0]);
}

/**
 * The REST door: one generic transcoder driven by the google.api.http annotations of the served
 * methods (path variables, query parameters, body mapping), plus the method policy's REST specifics
 * (success status, form bodies). It writes the spec's JSON and error shapes.
 */
export class RestTranscoder {
  private readonly routes: Route[];

  constructor(private readonly gateway: Gateway) {
    this.routes = gateway.registrations
      .flatMap((r) => r.service.methods.flatMap(routesOf))
      // Literal segments beat variables: /audit-logs/verify before /audit-logs/{id}.
      .sort((a, b) => b.literalCount - a.literalCount);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    const parts = url.pathname.split("/").filter(Boolean);
    const verb = (req.method ?? "GET").toUpperCase();
    const call = httpCallInfo(req);
    // Routes are sorted most literal segments first; once a path matches, less specific templates
    // are not considered, so a known path with the wrong verb is a 405 rather than a variable match.
    let matchedTier: number | null = null;
    const allowed = new Set<string>();
    for (const route of this.routes) {
      if (matchedTier !== null && route.literalCount < matchedTier) break;
      const vars = match(route, parts);
      if (!vars) continue;
      matchedTier = route.literalCount;
      allowed.add(route.verb);
      if (route.verb !== verb) continue;
      const method = route.method;
      await inRequestSpan(`${method.parent.typeName}/${method.name}`, "rest", call, () => this.serve(route, vars, url, req, res, call));
      return;
    }
    const err = matchedTier !== null
      ? new AppError({ code: "UNIMPLEMENTED", reason: "METHOD_NOT_ALLOWED", message: `${verb} is not allowed on ${url.pathname}` })
      : new AppError({ code: "NOT_FOUND", reason: "NOT_FOUND", message: `No route for ${verb} ${url.pathname}` });
    // No body is read here: drop whatever arrives, so that a client still sending reads the answer, not a reset.
    req.resume();
    // RFC 9110: a 405 names the methods the path does have.
    if (matchedTier !== null) res.setHeader("allow", [...allowed].join(", "));
    sendError(res, err, "problem", requestIdOf(call));
  }

  private async serve(
    route: Route,
    vars: Record<string, string>,
    url: URL,
    req: IncomingMessage,
    res: ServerResponse,
    call: CallInfo,
  ): Promise<void> {
    const policy = this.gateway.policy(route.method);
    const requestId = requestIdOf(call);
    try {
      let request: Message | undefined;
      const decode = async (): Promise<Message> => {
        const json = queryJson(route.method, parseQuery(url.search));
        let bodyKeys: string[] = [];
        const raw = rawBodyField(route);
        if (raw) {
          const body = await readBody(req, policy.maxBodyBytes);
          const httpBody = { contentType: req.headers["content-type"] ?? "", data: body.toString("base64") };
          if (raw === "*") Object.assign(json, httpBody);
          else json[raw.jsonName] = httpBody;
        } else if (route.body) {
          const body = await this.readRequestBody(req, policy);
          if (route.body === "*") {
            if (typeof body !== "object" || body === null || Array.isArray(body)) throw invalidField("body", "must be a JSON object");
            refuseQuotedNumbers(route.method.input, body, policy.acceptedFields);
            refuseConflicts(route.method, json, body);
            Object.assign(json, body);
            bodyKeys = Object.keys(body);
          } else {
            const name = fieldByName(route.method, route.body)?.jsonName ?? route.body;
            json[name] = oneOrList(route.method, route.body, body);
            refuseQuotedNumbers(route.method.input, { [name]: json[name] }, policy.acceptedFields);
          }
        } else {
          // A route that takes no body ignores one, but not past the size limit (spec 8: 413).
          await readBody(req, policy.maxBodyBytes);
        }
        for (const [name, raw] of Object.entries(vars)) {
          const value = percentDecode(raw);
          if (value === null) throw invalidField(fieldByName(route.method, name)?.jsonName ?? name, "is not valid percent-encoded UTF-8");
          json[fieldByName(route.method, name)?.jsonName ?? name] = value;
        }
        const accepted = policy.acceptedFields;
        const message = readJson(route.method.input, json, accepted);
        fillUpdateMask(route.method, message, accepted ? bodyKeys.filter((k) => accepted.has(k)) : bodyKeys, Object.keys(vars));
        return (request = message);
      };
      const result = await this.gateway.invoke(route.method, decode, {
        door: "rest",
        call,
        http: { method: route.verb, contentType: req.headers["content-type"] },
        requestId,
      });
      for (const [name, value] of Object.entries(rateLimitHeaders(result.rateLimit))) res.setHeader(name, value);
      res.setHeader("x-request-id", requestId);
      if (result.setCookie) res.setHeader("set-cookie", result.setCookie);
      if (policy.noStore) res.setHeader("cache-control", "no-store");
      if (route.method.output.typeName === HttpBodySchema.typeName) {
        sendHttpBody(res, policy.httpStatus, result.response as HttpBody);
        return;
      }
      if (policy.httpStatus === 204) {
        res.writeHead(204).end();
        return;
      }
      const payload = JSON.stringify(responseJson(route, result.response, request));
      res.writeHead(policy.httpStatus, { "content-type": "application/json; charset=utf-8" }).end(payload);
    } catch (err) {
      sendError(res, toAppError(err, this.gateway.logger, requestId), policy.errorFormat, requestId);
    }
  }

  /** JSON (or, where the method allows it, form-urlencoded) into a plain object; empty means {}. */
  private async readRequestBody(req: IncomingMessage, policy: ResolvedPolicy): Promise<JsonValue> {
    const raw = await readBody(req, policy.maxBodyBytes);
    if (raw.length === 0) return {};
    const type = mediaType(req.headers["content-type"]);
    const acceptForm = policy.acceptForm;
    if (acceptForm && type === "application/x-www-form-urlencoded") {
      const form: Record<string, string> = {};
      for (const [key, value] of new URLSearchParams(raw.toString("utf8"))) {
        // As in the query; RFC 6749 3.1 too: a parameter sent twice is refused, not "last wins".
        if (Object.hasOwn(form, key)) throw invalidField(key, "must be given once, as a single value");
        form[key] = value;
      }
      return form;
    }
    // A body without a Content-Type is refused too (spec 7: 415 when it is not application/json).
    if (!isJsonMediaType(type) && !policy.anyContentType) {
      throw new AppError({
        code: "INVALID_ARGUMENT",
        reason: "UNSUPPORTED_MEDIA_TYPE",
        message: `Content-Type must be application/json${acceptForm ? " or application/x-www-form-urlencoded" : ""}, got ${type || "none"}`,
      });
    }
    return parseJsonBody(raw);
  }
}

/**
 * Update semantics on REST: the keys present in the body form the update mask (so `null` clears a
 * nullable field and absent keys stay unchanged), unless the body sends updateMask itself.
 */
function fillUpdateMask(method: DescMethod, message: Message, bodyKeys: string[], pathVars: string[]): void {
  const maskField = method.input.fields.find((f) => f.name === "update_mask" && f.message?.typeName === FieldMaskSchema.typeName);
  if (!maskField || bodyKeys.includes(maskField.jsonName) || bodyKeys.includes(maskField.name)) return;
  const paths = bodyKeys
    .map((k) => fieldByName(method, k))
    .filter((f): f is DescField => f !== undefined && f !== maskField && !pathVars.includes(f.name) && f.name !== "id")
    .map((f) => f.name);
  (message as Record<string, unknown>)[maskField.localName] = create(FieldMaskSchema, { paths });
}

/**
 * The REST answer: the response message in the spec's JSON, or with `response_body` only that
 * field of it (spec 4.6 answers `GET /alerts` with a bare array of rules).
 */
function responseJson(route: Route, response: Message, request?: Message): JsonValue {
  const json = writeJson(route.method.output, response, request);
  if (!route.responseBody) return json;
  const field = route.method.output.fields.find((f) => f.name === route.responseBody)!;
  return (json as Record<string, JsonValue>)[field.jsonName] ?? null;
}

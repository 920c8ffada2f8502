import type { IncomingMessage, ServerResponse } from "node:http";
import { createRegistry, type DescMethod, type JsonValue, type Message } from "@bufbuild/protobuf";
import { DownloadDispositionSchema } from "../../gen/decisioning/v1/common_pb.js";
import { ConnectError, createConnectRouter, createContextKey, createContextValues, type HandlerContext } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { CallInfo } from "../platform/context.js";
import { isAppError } from "../platform/errors.js";
import { CONNECT_CODES, errorHeaders, rateLimitHeaders, toAppError } from "./error-mapping.js";
import { requestIdOf, type Gateway } from "./gateway.js";
import { inRequestSpan } from "../platform/tracing.js";
import { httpCallInfo, mediaType, readBody, sendError } from "./http-io.js";
import { refuseQuotedNumbers } from "./json-numbers.js";
import { connectJson, parseJsonBody, readBinary, readJson } from "./message-codec.js";

export const CONNECT_PREFIX = "/api/v1";

const callKey = createContextKey<CallInfo>({ header: () => undefined, remoteAddress: "" });
/** The request body as this door read it; Connect itself only ever sees an empty message. */
const bodyKey = createContextKey<Buffer>(Buffer.alloc(0));
/** The JSON answer when it differs from Connect's own serialization (message-codec.ts connectJson). */
const answerKey = createContextKey<JsonValue | null>(null);

const BINARY = "application/proto";

const isBinary = (ctx: HandlerContext) => mediaType(ctx.requestHeader.get("content-type") ?? undefined) === BINARY;

/** The same decoding, and so the same errors (`<field>: <message>`, `Invalid JSON`), as the other doors. */
function decode(method: DescMethod, ctx: HandlerContext, accepted: ReadonlySet<string> | null): Message {
  const body = ctx.values.get(bodyKey);
  if (isBinary(ctx)) return readBinary(method.input, body);
  const json = parseJsonBody(body);
  refuseQuotedNumbers(method.input, json, accepted);
  return readJson(method.input, json, accepted);
}

/**
 * The Connect door (JSON and binary) at /api/v1/<package.Service>/<Method>. Connect handles the
 * protocol (content types, headers, response encoding, error bodies); this door reads and decodes the
 * body itself, for two reasons: Connect reports an oversize body as resource_exhausted, which its
 * protocol renders as 429 where spec 7 wants 413, and it decodes before authentication with
 * protobuf's own messages, where the other doors decode after it and name the field.
 */
export function createConnectHandler(gateway: Gateway) {
  const router = createConnectRouter({
    // gRPC has its own port (GRPC_PORT); here the protocol is Connect's, over HTTP/1.1 or h2c.
    grpc: false,
    grpcWeb: false,
    // The registry lets Connect's JSON write the DownloadDisposition packed into file answers (HttpBody).
    jsonOptions: { alwaysEmitImplicit: true, registry: createRegistry(DownloadDispositionSchema) },
    // Compressed request bodies are refused (unimplemented), since this door reads the raw body.
    acceptCompression: [],
  });
  for (const { service } of gateway.registrations) {
    for (const method of service.methods) {
      router.rpc(method as DescMethod & { methodKind: "unary" }, (_empty: unknown, ctx: HandlerContext) => {
        const call = ctx.values.get(callKey);
        const requestId = requestIdOf(call);
        return inRequestSpan(`${service.typeName}/${method.name}`, "connect", call, async () => {
          try {
            let request: Message | undefined;
            const result = await gateway.invoke(method, () => (request = decode(method, ctx, gateway.policy(method).acceptedFields)), {
              door: "connect",
              call,
              http: { method: "POST", contentType: ctx.requestHeader.get("content-type") ?? undefined },
              requestId,
            });
            ctx.responseHeader.set("x-request-id", result.requestId);
            if (result.setCookie) ctx.responseHeader.set("set-cookie", result.setCookie);
            if (gateway.policy(method).noStore) ctx.responseHeader.set("cache-control", "no-store");
            for (const [name, value] of Object.entries(rateLimitHeaders(result.rateLimit))) ctx.responseHeader.set(name, value);
            if (!isBinary(ctx)) ctx.values.set(answerKey, connectJson(method.output, result.response, request!));
            return result.response as never;
          } catch (err) {
            const app = toAppError(err, gateway.logger, requestId);
            throw new ConnectError(app.message, CONNECT_CODES[app.code], errorHeaders(app, requestId));
          }
        });
      });
    }
  }
  const handlers = new Map(router.handlers.map((h) => [CONNECT_PREFIX + h.requestPath, h]));

  return {
    /** True when the path names a Connect method (so the REST door does not see it). */
    serves: (pathname: string) => handlers.has(pathname),
    async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
      const handler = handlers.get((req.url ?? "/").split("?")[0])!;
      const policy = gateway.policy(handler.method);
      const call = httpCallInfo(req);
      const values = createContextValues().set(callKey, call);
      try {
        values.set(bodyKey, await readBody(req, policy.maxBodyBytes));
      } catch (err) {
        if (!isAppError(err)) throw err;
        // Written here because Connect has no 413 (the read fails with PAYLOAD_TOO_LARGE, or when the
        // client is gone); Connect's `code` and `message` beside the spec's shape keep its clients working.
        return sendError(res, err, policy.errorFormat, requestIdOf(call), { code: codeToString(CONNECT_CODES[err.code]), message: err.message });
      }
      // Connect parses this placeholder by content type (bytes as binary, a value as JSON): an empty message.
      const placeholder = (mediaType(req.headers["content-type"]) === BINARY ? new Uint8Array(0) : {}) as JsonValue;
      const uRes = await handler(universalRequestFromNodeRequest(req, res, placeholder, values));
      const answer = values.get(answerKey);
      if (answer !== null && uRes.status === 200) {
        const bytes = Buffer.from(JSON.stringify(answer));
        uRes.header?.set("content-length", String(bytes.length));
        uRes.body = (async function* () {
          yield new Uint8Array(bytes);
        })();
      }
      await universalResponseToNodeResponse(uRes, res);
    },
  };
}

import type { IncomingMessage, ServerResponse } from "node:http";
import type { DescMethod } from "@bufbuild/protobuf";
import { ConnectError, createContextKey, createContextValues, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import type { CallInfo } from "../platform/context.js";
import { CONNECT_CODES, toAppError } from "./error-mapping.js";
import { payloadTooLarge, requestIdOf, type Gateway } from "./gateway.js";

export const CONNECT_PREFIX = "/api/v1";

const remoteAddressKey = createContextKey<string>("");

function callInfo(ctx: HandlerContext): CallInfo {
  return {
    header: (name) => ctx.requestHeader.get(name) ?? undefined,
    remoteAddress: ctx.values.get(remoteAddressKey),
  };
}

/**
 * The Connect door (JSON and binary) at /api/v1/<package.Service>/<Method>. It hands every call to
 * the gateway and turns AppErrors into Connect errors carrying the reason in `x-error-reason`.
 */
export function createConnectHandler(gateway: Gateway) {
  const methods = new Map<string, DescMethod>();
  const routes = (router: ConnectRouter) => {
    for (const { service } of gateway.registrations) {
      for (const method of service.methods) {
        methods.set(`${CONNECT_PREFIX}/${service.typeName}/${method.name}`, method);
        const policy = gateway.policy(method);
        router.rpc(
          method as DescMethod & { methodKind: "unary" },
          async (request: any, ctx: HandlerContext) => {
            const call = callInfo(ctx);
            const requestId = requestIdOf(call);
            try {
              const result = await gateway.invoke(method, () => request, {
                call,
                http: { method: "POST", contentType: ctx.requestHeader.get("content-type") ?? undefined },
                requestId,
              });
              ctx.responseHeader.set("x-request-id", result.requestId);
              if (result.rateLimit) {
                ctx.responseHeader.set("x-ratelimit-limit", String(result.rateLimit.limit));
                ctx.responseHeader.set("x-ratelimit-remaining", String(result.rateLimit.remaining));
              }
              return result.response as any;
            } catch (err) {
              const app = toAppError(err, gateway.logger, requestId);
              const metadata = new Headers({ "x-error-reason": app.reason, "x-request-id": requestId });
              if (typeof app.details.retryAfterSeconds === "number") metadata.set("retry-after", String(app.details.retryAfterSeconds));
              throw new ConnectError(app.message, CONNECT_CODES[app.code], metadata);
            }
          },
          { readMaxBytes: policy.maxBodyBytes },
        );
      }
    }
  };
  const adapter = connectNodeAdapter({
    routes,
    requestPathPrefix: CONNECT_PREFIX,
    grpc: false,
    grpcWeb: false,
    jsonOptions: { alwaysEmitImplicit: true, ignoreUnknownFields: true },
    contextValues: (req) => createContextValues().set(remoteAddressKey, req.socket.remoteAddress ?? ""),
  });

  return {
    /** True when the path names a Connect method (so the REST door does not see it). */
    serves: (pathname: string) => methods.has(pathname),
    handle(req: IncomingMessage, res: ServerResponse) {
      // Connect maps an over-limit read to resource_exhausted, which its protocol renders as 429:
      // check the declared size first so that an oversize body is a 413, as on the REST door.
      const method = methods.get(new URL(req.url ?? "/", "http://localhost").pathname);
      const declared = Number(req.headers["content-length"] ?? 0);
      if (method && declared > gateway.policy(method).maxBodyBytes) {
        const err = payloadTooLarge(gateway.policy(method).maxBodyBytes);
        req.resume();
        res.writeHead(413, { "content-type": "application/json", "x-error-reason": err.reason, connection: "close" });
        res.end(JSON.stringify({ code: "resource_exhausted", message: err.message }));
        return;
      }
      adapter(req, res);
    },
  };
}

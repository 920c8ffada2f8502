import type { DescMessage, DescMethod, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { RecommendRequestSchema, RecommendResponseSchema, type RecommendRequest, type RecommendResponse } from "../../gen/decisioning/v1/decisions_pb.js";
import { authorize, type Authenticated } from "../identity/authenticator.js";
import type { CallInfo, TenantContext } from "../platform/context.js";
import { AppError } from "../platform/errors.js";
import { methodPolicy } from "../platform/method-policy.js";
import type { Handler, ServiceRegistration } from "../platform/service-registration.js";
import { readJson, writeJson } from "../transport/message-codec.js";
import { screenRequest } from "../transport/request-screen.js";

/** The registered service methods, found by their descriptor (what the gateway dispatches to). */
export class ServiceMethods {
  private readonly handlers = new Map<DescMethod, Handler>();

  constructor(registrations: readonly ServiceRegistration[]) {
    for (const { service, impl } of registrations) {
      for (const method of service.methods) {
        const handler = impl[method.localName];
        if (typeof handler === "function") this.handlers.set(method, handler.bind(impl));
      }
    }
  }

  handler(method: DescMethod): Handler {
    const handler = this.handlers.get(method);
    if (!handler) throw new AppError({ code: "UNIMPLEMENTED", reason: "UNIMPLEMENTED", message: `${method.name} is not served` });
    return handler;
  }
}

/**
 * What an MCP tool may do on behalf of one authenticated caller: call a service method exactly as
 * the gateway would (that method's plane and role rules, its JSON decoding and request screen, its
 * JSON encoding of the answer), or preview a decision.
 */
export class ServiceCaller {
  constructor(
    private readonly methods: ServiceMethods,
    private readonly auth: Authenticated,
    readonly ctx: TenantContext,
    private readonly call: CallInfo,
    private readonly bodyLimitBytes: number,
    private readonly previewDecision: (ctx: TenantContext, req: RecommendRequest) => Promise<RecommendResponse>,
  ) {}

  async invoke(method: DescMethod, request: ToolRequest): Promise<JsonValue> {
    authorize(this.auth, methodPolicy(method, this.bodyLimitBytes));
    const message = decode(method.input, request);
    const response = await this.methods.handler(method)(this.ctx, message, this.call);
    return writeJson(method.output, response, message);
  }

  /** A dry-run Recommend (decision-preview.ts): the caller's control-plane access is all it needs. */
  async preview(request: ToolRequest): Promise<JsonValue> {
    const message = decode(RecommendRequestSchema, request);
    return writeJson(RecommendResponseSchema, await this.previewDecision(this.ctx, message), message);
  }
}

/** A tool's arguments as protobuf JSON; absent optional arguments are left out. */
export type ToolRequest = Record<string, JsonValue | undefined>;

/** Arguments → request message, with the gateway's decoding and request screen (400s naming the field). */
function decode<D extends DescMessage>(schema: D, request: ToolRequest): MessageShape<D> {
  const json = Object.fromEntries(Object.entries(request).filter(([, v]) => v !== undefined)) as Record<string, JsonValue>;
  const message = readJson(schema, json);
  screenRequest(schema, message);
  return message;
}

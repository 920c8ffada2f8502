import type { DescService, Message } from "@bufbuild/protobuf";
import type { CallInfo, TenantContext } from "./context.js";

/** A service method as every door calls it: the tenant context first, then the decoded request. */
export type Handler = (ctx: TenantContext, request: any, call: CallInfo) => Promise<Message>;

/** What a domain hands to the doors: a proto service and its methods, keyed by localName. */
export interface ServiceRegistration {
  service: DescService;
  impl: Record<string, Handler>;
}

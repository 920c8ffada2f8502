import type { ServiceRegistration } from "../platform/service-registration.js";
import type { HttpRoute } from "../transport/http-routes.js";
import { createMcpRoute, type McpRouteOptions } from "./mcp-route.js";
import { ServiceMethods } from "./service-caller.js";

/** The hosted MCP endpoint (spec 5.2, docs/mcp.md): one HTTP route whose tools call the registered services. */
export function createMcp(o: Omit<McpRouteOptions, "methods"> & { registrations: readonly ServiceRegistration[] }): { route: HttpRoute } {
  const { registrations, ...options } = o;
  return { route: createMcpRoute({ ...options, methods: new ServiceMethods(registrations) }) };
}

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { toAppError } from "../transport/error-mapping.js";
import type { Logger } from "../platform/logger.js";
import { MCP_TOOLS } from "./mcp-tools.js";
import type { ServiceCaller } from "./service-caller.js";

export const MCP_SERVER_INFO = { name: "decisioning-service", version: "1.0.0" };

/**
 * An MCP server whose tools act for one caller. Built per request: the endpoint is stateless
 * (docs/mcp.md), so a server lives exactly as long as the HTTP request it answers. Tool failures
 * are tool results with `isError` (the SDK's own for arguments that fail the input schema, which
 * name the field; an AppError's message otherwise), never protocol errors or 500s.
 */
export function createMcpServer(caller: ServiceCaller, logger: Logger): McpServer {
  const server = new McpServer(MCP_SERVER_INFO, { capabilities: { tools: {} } });
  for (const tool of MCP_TOOLS) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.inputSchema, annotations: { readOnlyHint: tool.readOnly } },
      async (args: Record<string, unknown>) => {
        try {
          const result = await tool.run(caller, args as never);
          return { content: [{ type: "text" as const, text: JSON.stringify(result) }] };
        } catch (err) {
          // The doors' mapping: an unexpected failure is logged with its cause and answered without it.
          const appError = toAppError(err, logger, caller.ctx.requestId);
          return { isError: true, content: [{ type: "text" as const, text: appError.message }] };
        }
      },
    );
  }
  return server;
}

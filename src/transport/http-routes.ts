import type { IncomingMessage, ServerResponse } from "node:http";

/**
 * A route the HTTP door serves outside protobuf, for protocols whose wire shape is not ours to choose
 * or that need what a message cannot carry: browser sign-in with cookies and redirects, SCIM
 * (`application/scim+json`), the MCP Streamable HTTP transport, file downloads. Each route does its
 * own authentication through the shared Authenticator and answers errors in the spec 7 shape
 * (`sendError` in http-io.ts), so that these doors keep the same rules as the generated ones.
 */
export interface HttpRoute {
  /** An exact path, or a prefix when it ends in "/" (the route then serves everything under it). */
  readonly path: string;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/** The route serving `pathname`: an exact path wins over a prefix, and a longer prefix over a shorter. */
export function findHttpRoute(routes: readonly HttpRoute[], pathname: string): HttpRoute | undefined {
  let best: HttpRoute | undefined;
  for (const route of routes) {
    if (route.path === pathname) return route;
    if (route.path.endsWith("/") && pathname.startsWith(route.path) && (!best || route.path.length > best.path.length)) best = route;
  }
  return best;
}

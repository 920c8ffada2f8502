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
  /**
   * Whether this route serves `req`, for a route that takes only some requests under its path (a
   * signed report download, beside the generated authenticated route); the others go on to Connect
   * and REST. Absent: every request under the path.
   */
  claims?(req: IncomingMessage): boolean;
  handle(req: IncomingMessage, res: ServerResponse): Promise<void>;
}

/**
 * The route serving `pathname`: an exact path wins over a prefix, and a longer prefix over a shorter;
 * with `req`, a route that does not claim it is passed over.
 */
export function findHttpRoute(routes: readonly HttpRoute[], pathname: string, req?: IncomingMessage): HttpRoute | undefined {
  let best: HttpRoute | undefined;
  for (const route of routes) {
    if (req && route.claims && !route.claims(req)) continue;
    if (route.path === pathname) return route;
    if (route.path.endsWith("/") && pathname.startsWith(route.path) && (!best || route.path.length > best.path.length)) best = route;
  }
  return best;
}

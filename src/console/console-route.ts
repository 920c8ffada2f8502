import { readFile } from "node:fs/promises";
import { extname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { IncomingMessage, ServerResponse } from "node:http";
import { AppError } from "../platform/errors.js";
import { sendError } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";

/** Where `npm ci` (the root `prepare` script) leaves the built console. */
export const CONSOLE_DIST = fileURLToPath(new URL("../../console/dist/", import.meta.url));

/**
 * Scripts, styles, images, fonts and API calls from this origin only; no inline script or style, no
 * frames, no plugins. The console bundle is self-contained, so nothing needs a wider rule.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json; charset=utf-8",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/**
 * Serves the console's static files under `/console/`. A path without a file extension is a page of
 * the single-page app and gets `index.html` (the client routes it); a missing asset is 404. Vite names
 * assets by content hash, so they are cached for a year; `index.html` is never cached, so a deploy
 * takes effect on the next load. The console is a client of the public API like any other: this
 * route serves files only and reads no data.
 */
export function createConsoleRoutes(dist = CONSOLE_DIST): HttpRoute[] {
  const send = async (res: ServerResponse, file: string, head: boolean) => {
    const body = await readFile(file);
    const isIndex = file.endsWith(`${sep}index.html`);
    res.writeHead(200, {
      "content-type": TYPES[extname(file)] ?? "application/octet-stream",
      "content-length": body.length,
      "content-security-policy": CONSOLE_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "same-origin",
      "cache-control": isIndex ? "no-store" : "public, max-age=31536000, immutable",
    });
    res.end(head ? undefined : body);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? "GET";
    if (method !== "GET" && method !== "HEAD") {
      sendError(res, new AppError({ code: "UNIMPLEMENTED", reason: "METHOD_NOT_ALLOWED", message: `${method} is not allowed on the console` }), "problem", "");
      return;
    }
    const pathname = new URL(req.url ?? "/", "http://x").pathname;
    if (pathname === "/console") {
      res.writeHead(308, { location: "/console/" });
      res.end();
      return;
    }
    const notFound = () =>
      sendError(res, new AppError({ code: "NOT_FOUND", reason: "NOT_FOUND", message: `No console file ${pathname}` }), "problem", "");
    // The URL parser resolves dot segments (`/console/../x`, `%2e%2e` too): a path they take out of
    // the console is no console file, though the route matched the path as sent.
    if (!pathname.startsWith("/console/")) return notFound();
    let relative: string;
    try {
      relative = decodeURIComponent(pathname.slice("/console/".length));
    } catch {
      relative = "\0";
    }
    const file = normalize(join(dist, relative));
    if (!file.startsWith(dist) || relative.includes("\0")) return notFound();
    const isPage = !extname(relative);
    try {
      await send(res, isPage ? join(dist, "index.html") : file, method === "HEAD");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "EISDIR") throw err;
      if (!isPage) return notFound();
      sendError(res, new AppError({ code: "UNAVAILABLE", reason: "CONSOLE_NOT_BUILT", message: "The console is not built: run npm ci (or npm run build --workspace console)" }), "problem", "");
    }
  };

  return [
    { path: "/console", handle },
    { path: "/console/", handle },
  ];
}

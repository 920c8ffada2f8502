import type { IncomingMessage, ServerResponse } from "node:http";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { AppError } from "../platform/errors.js";
import { sendError } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";

export const OPENAPI_PATH = "/api/v1/openapi.json";
export const DOCS_PATH = "/api/docs";

const DOCUMENT_FILE = join(import.meta.dirname, "../../gen/openapi/openapi.json");
const PAGE_DIR = join(import.meta.dirname, "docs-page");
const VIEWER_DIR = dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));

/**
 * Scripts and styles from this origin only, no inline script or style element, no frames, and
 * requests only back to this origin (the document, and "Try it out").
 */
export const DOCS_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** The files the docs page may load, by name under /api/docs/: ours, then the viewer's (swagger-ui-dist). */
const ASSETS: Record<string, { file: string; type: string }> = {
  "init.js": { file: join(PAGE_DIR, "init.js"), type: "text/javascript; charset=utf-8" },
  "swagger-ui-bundle.js": { file: join(VIEWER_DIR, "swagger-ui-bundle.js"), type: "text/javascript; charset=utf-8" },
  "swagger-ui.css": { file: join(VIEWER_DIR, "swagger-ui.css"), type: "text/css; charset=utf-8" },
  "favicon-32x32.png": { file: join(VIEWER_DIR, "favicon-32x32.png"), type: "image/png" },
};
const PAGE = { file: join(PAGE_DIR, "index.html"), type: "text/html; charset=utf-8" };

/**
 * The REST door's OpenAPI document (the committed gen/openapi/openapi.json, which CI keeps equal to
 * what the protos generate) and its viewer. Both are public, like the routes' shapes in the README:
 * the document describes the API and holds nothing of any tenant (docs/openapi.md).
 */
export function openApiRoutes(): HttpRoute[] {
  const cache = new Map<string, Buffer>();
  const read = async (file: string): Promise<Buffer> => {
    let bytes = cache.get(file);
    if (!bytes) cache.set(file, (bytes = await readFile(file)));
    return bytes;
  };
  const serve = async (req: IncomingMessage, res: ServerResponse, asset: { file: string; type: string } | undefined, headers: Record<string, string> = {}) => {
    req.resume();
    if (req.method !== "GET" && req.method !== "HEAD") {
      return sendError(res, new AppError({ code: "UNIMPLEMENTED", reason: "METHOD_NOT_ALLOWED", message: `${req.method} is not allowed on ${req.url}` }), "problem", "");
    }
    if (!asset) return sendError(res, new AppError({ code: "NOT_FOUND", reason: "NOT_FOUND", message: `No route for GET ${req.url}` }), "problem", "");
    const body = await read(asset.file);
    res.writeHead(200, {
      "content-type": asset.type,
      "content-length": String(body.length),
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
      ...headers,
    });
    res.end(req.method === "HEAD" ? undefined : body);
  };
  const page = (req: IncomingMessage, res: ServerResponse) =>
    serve(req, res, PAGE, { "content-security-policy": DOCS_CSP, "referrer-policy": "no-referrer" });
  return [
    { path: OPENAPI_PATH, handle: (req, res) => serve(req, res, { file: DOCUMENT_FILE, type: "application/json; charset=utf-8" }) },
    { path: DOCS_PATH, handle: page },
    {
      path: `${DOCS_PATH}/`,
      handle: (req, res) => {
        const name = new URL(req.url ?? "/", "http://localhost").pathname.slice(DOCS_PATH.length + 1);
        return name === "" ? page(req, res) : serve(req, res, Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined);
      },
    },
  ];
}

import type { IncomingMessage } from "node:http";
import { payloadTooLarge } from "./gateway.js";

/** Reads a request body up to `limit` bytes; a larger body is a 413 (spec 7), checked before and while reading. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? 0);
  if (declared > limit) {
    req.resume();
    throw payloadTooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      req.resume();
      throw payloadTooLarge(limit);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

export function isJsonMediaType(type: string): boolean {
  return type === "application/json" || type.endsWith("+json");
}

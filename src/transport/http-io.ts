import type { IncomingMessage, ServerResponse } from "node:http";
import { fromBinary } from "@bufbuild/protobuf";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import { DownloadDispositionSchema } from "../../gen/decisioning/v1/common_pb.js";
import type { CallInfo } from "../platform/context.js";
import { badRequest, type AppError } from "../platform/errors.js";
import type { ErrorFormatName } from "../platform/method-policy.js";
import { httpErrorResponse } from "./error-mapping.js";
import { payloadTooLarge } from "./gateway.js";

/**
 * Reads a request body up to `limit` bytes; a larger one is a 413 (spec 7), whether it declares its
 * length or arrives chunked. The rest of an oversize body is read and dropped rather than the
 * connection destroyed, so that a client still sending reads the 413 instead of a reset.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const tooLarge = () => {
      req.off("data", onData);
      req.resume();
      reject(payloadTooLarge(limit));
    };
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge();
      else chunks.push(chunk);
    };
    if (Number(req.headers["content-length"] ?? 0) > limit) return tooLarge();
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
    req.once("close", () => req.complete || reject(badRequest("REQUEST_ABORTED", "The request was aborted before its body was complete")));
  });
}

/** What the gateway may know of an HTTP request beyond its message. */
export function httpCallInfo(req: IncomingMessage): CallInfo {
  return {
    header(name) {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    },
    remoteAddress: req.socket.remoteAddress ?? "",
  };
}

export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

export function isJsonMediaType(type: string): boolean {
  return type === "application/json" || type.endsWith("+json");
}

/**
 * Writes one of spec 7's error bodies. `extra` lets a protocol add its own fields beside the spec's
 * (Connect's `code` and `message`, which its clients read).
 */
export function sendError(
  res: ServerResponse,
  err: AppError,
  format: ErrorFormatName,
  requestId: string,
  extra: Record<string, unknown> = {},
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const out = httpErrorResponse(err, format, requestId);
  res.writeHead(out.status, { ...out.headers, "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ ...extra, ...out.body }));
}

/**
 * A google.api.HttpBody answer: its bytes with its Content-Type, and, when a DownloadDisposition is
 * packed into its extensions, `Content-Disposition: attachment` with that file name. The REST door
 * and the routes outside protobuf that answer files (a signed report download) both write it here.
 */
export function sendHttpBody(res: ServerResponse, status: number, body: HttpBody): void {
  const headers: Record<string, string> = { "content-type": body.contentType || "application/octet-stream" };
  const ext = body.extensions.find((a) => a.typeUrl === `type.googleapis.com/${DownloadDispositionSchema.typeName}`);
  const filename = ext ? fromBinary(DownloadDispositionSchema, ext.value).filename : null;
  if (filename) headers["content-disposition"] = `attachment; filename="${filename.replace(/["\\\r\n]/g, "_")}"`;
  res.writeHead(status, headers);
  res.end(Buffer.from(body.data));
}

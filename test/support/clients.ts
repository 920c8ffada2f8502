import { request, type ClientRequest, type RequestOptions } from "node:http";
import { createClient, ConnectError, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type { DescService } from "@bufbuild/protobuf";

/** Real clients for each door: Connect JSON and binary over HTTP/1.1, gRPC over HTTP/2. */
export function connectClient<S extends DescService>(service: S, baseUrl: string, binary = false): Client<S> {
  return createClient(service, createConnectTransport({ baseUrl: `${baseUrl}/api/v1`, httpVersion: "1.1", useBinaryFormat: binary }));
}

export function grpcClient<S extends DescService>(service: S, address: string): Client<S> {
  return createClient(service, createGrpcTransport({ baseUrl: `http://${address}` }));
}

/** Runs a call expected to fail and returns its ConnectError (code, message, reason metadata). */
export async function rpcError(p: Promise<unknown>): Promise<{ code: number; reason: string | null; message: string }> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, reason: e.metadata.get("x-error-reason"), message: e.rawMessage };
  }
  throw new Error("expected the call to fail");
}

export interface RestResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** REST call as a user would make it: JSON in, JSON (or nothing) out. */
export async function rest(
  baseUrl: string,
  method: string,
  path: string,
  opts: { key?: string; bearer?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {},
): Promise<RestResponse> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers["x-api-key"] = opts.key;
  if (opts.bearer) headers.authorization = `Bearer ${opts.bearer}`;
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(baseUrl + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* non-JSON bodies are returned as text */
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/**
 * A POST whose body arrives chunked (no Content-Length), `size` bytes of JSON string, so that a
 * body limit must be enforced while reading rather than from the declared length.
 */
export function chunkedPost(baseUrl: string, path: string, headers: Record<string, string>, size: number): Promise<RestResponse> {
  return post(new URL(path, baseUrl), { headers: { ...headers, "transfer-encoding": "chunked" } }, (req) => {
    req.write('{"name":"');
    const chunk = Buffer.alloc(64 * 1024, "a");
    for (let sent = 0; sent < size; sent += chunk.length) req.write(chunk);
    req.end('"}');
  });
}

/** A JSON POST sent from another loopback address (Linux routes all of 127/8 to lo), as from a second machine. */
export function postFrom(localAddress: string, baseUrl: string, path: string, body: unknown): Promise<RestResponse> {
  return post(new URL(path, baseUrl), { localAddress, headers: { "content-type": "application/json" } }, (req) => req.end(JSON.stringify(body)));
}

/** A GET of `path` exactly as written: fetch and `new URL` resolve its dot segments (`..`, `%2e%2e`) before sending. */
export function getAsSent(baseUrl: string, path: string): Promise<RestResponse> {
  const { hostname, port } = new URL(baseUrl);
  return exchange({ host: hostname, port, path, method: "GET" }, (req) => req.end());
}

function post(url: URL, options: RequestOptions, send: (req: ClientRequest) => void): Promise<RestResponse> {
  return exchange({ ...urlOptions(url), ...options, method: "POST" }, send);
}

const urlOptions = (url: URL): RequestOptions => ({ host: url.hostname, port: url.port, path: url.pathname + url.search });

/** One request over node:http; a JSON answer is parsed, any other is its text. */
function exchange(options: RequestOptions, send: (req: ClientRequest) => void): Promise<RestResponse> {
  return new Promise((resolve, reject) => {
    const req = request(options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        const body = !text ? null : /json/.test(res.headers["content-type"] ?? "") ? JSON.parse(text) : text;
        resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body });
      });
    });
    req.on("error", reject);
    send(req);
  });
}

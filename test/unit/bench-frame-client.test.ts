import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Http2Server, type ServerHttp2Stream } from "node:http2";
import type { AddressInfo } from "node:net";
import { grpcFrameClient } from "../../bench/h2-frames.js";

/**
 * The bench's frame client (bench/h2-frames.ts) against node:http2's server: what it sends must be
 * valid HTTP/2 and HPACK (the server decodes every header), and it must tell a gRPC error from an
 * answer without reading grpc-status.
 */
describe("bench frame client", () => {
  let server: Http2Server;
  let port = 0;
  const seen: Array<{ path: string; key: string | undefined; te: string | undefined; body: Buffer; session: unknown }> = [];

  before(async () => {
    server = createServer();
    server.on("stream", (stream: ServerHttp2Stream, headers) => {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const path = String(headers[":path"]);
        seen.push({ path, key: headers["x-api-key"] as string | undefined, te: headers.te as string | undefined, body: Buffer.concat(chunks), session: stream.session });
        if (path.endsWith("/Fail")) {
          // A gRPC error: trailers only, no message.
          stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "5" }, { endStream: true });
          return;
        }
        stream.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
        stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
        stream.end(Buffer.from([0, 0, 0, 0, 1, 0x08]));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test("sends the path, the headers and the message framed as gRPC; resolves on an answer with a message", async () => {
    const client = grpcFrameClient(port, { "x-api-key": "k-1" }, 1);
    seen.length = 0;
    const message = new Uint8Array([0x0a, 0x02, 0x68, 0x69]);
    // The first call adds the headers to the server's table, the later ones name them by index.
    for (let i = 0; i < 3; i++) await client.call("/pkg.Service/Method", message);
    client.close();
    assert.equal(seen.length, 3);
    for (const s of seen) {
      assert.equal(s.path, "/pkg.Service/Method");
      assert.equal(s.key, "k-1");
      assert.equal(s.te, "trailers");
      assert.deepEqual([...s.body], [0, 0, 0, 0, 4, 0x0a, 0x02, 0x68, 0x69]);
    }
  });

  test("rejects a call answered with trailers only (a gRPC error status), on any path of the connection", async () => {
    const client = grpcFrameClient(port, { "x-api-key": "k-2" }, 1);
    await client.call("/pkg.Service/Method", new Uint8Array([1]));
    await assert.rejects(client.call("/pkg.Service/Fail", new Uint8Array([1])), /gRPC error status/);
    await client.call("/pkg.Service/Method", new Uint8Array([1]));
    client.close();
  });

  test("keeps within the server's flow-control window: more than 64 KiB of messages, 16 in flight", async () => {
    const client = grpcFrameClient(port, { "x-api-key": "k-3" }, 2);
    seen.length = 0;
    const message = new Uint8Array(900).fill(7);
    let next = 0;
    const worker = async () => {
      while (next < 400) {
        next++;
        await client.call("/pkg.Service/Method", message);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    client.close();
    assert.equal(seen.length, 400);
    assert.ok(seen.every((s) => s.body.length === 905));
  });

  test("a call given a connection goes out on it; the others take the connections in turn", async () => {
    const client = grpcFrameClient(port, { "x-api-key": "k-4" }, 3);
    seen.length = 0;
    const message = new Uint8Array([1]);
    for (let n = 0; n < 6; n++) await client.call("/pkg.Service/Method", message);
    // Keys 0-5 on connections n % 3, then the same keys again in another order.
    for (const n of [4, 1, 5, 0, 3, 2]) await client.call("/pkg.Service/Method", message, n);
    client.close();
    const sessions = [...new Set(seen.map((s) => s.session))];
    assert.equal(sessions.length, 3);
    const on = seen.map((s) => sessions.indexOf(s.session));
    assert.deepEqual(on.slice(0, 6), [0, 1, 2, 0, 1, 2]);
    assert.deepEqual(on.slice(6), [4, 1, 5, 0, 3, 2].map((n) => on[n]));
  });
});

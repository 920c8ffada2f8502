/**
 * A gRPC client that writes HTTP/2 frames itself, for lanes whose requests must differ (h2load
 * sends one body per run). node:http2 costs about 0.12 ms of CPU per call on the client side, a
 * third of what the service spends on a fresh-key Respond, on the same two cores; this client
 * sends a request as two frames in one socket write (HEADERS with a header block encoded once per
 * path, DATA with the message) and reads only frame headers: about a fifth of that.
 *
 * It does not decode the answer's header blocks (HPACK), so it does not read `grpc-status`; it
 * tells an error by its shape instead. A unary answer that succeeded carries its message in DATA
 * before the trailers; a gRPC error is "trailers only", one HEADERS frame that ends the stream. A
 * call therefore resolves when its stream ends after DATA, and rejects when it ends without, and
 * on RST_STREAM, GOAWAY or a closed socket.
 */
import { connect, type Socket } from "node:net";
import { grpcFrame } from "./h2load.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");
const DATA = 0x0;
const HEADERS = 0x1;
const RST_STREAM = 0x3;
const SETTINGS = 0x4;
const PING = 0x6;
const GOAWAY = 0x7;
const WINDOW_UPDATE = 0x8;
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const SETTINGS_ENABLE_PUSH = 0x2;
const SETTINGS_INITIAL_WINDOW_SIZE = 0x4;
/** What this client lets the server send before it must hear from us: far more than a lane's answers. */
const STREAM_WINDOW = 1 << 24;
const CONNECTION_WINDOW_EXTRA = (1 << 30) - 65_535;

export interface GrpcFrameClient {
  /**
   * One unary call with an already serialized message; resolves when the stream ends. With
   * `connection`, it goes out on that connection (modulo their number) rather than the next in
   * turn: a client that retries does so on the connection it first used, as a gRPC channel does.
   */
  call(path: string, message: Uint8Array, connection?: number): Promise<void>;
  close(): void;
}

function frame(type: number, flags: number, streamId: number, payload: Buffer): Buffer {
  const head = Buffer.allocUnsafe(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, payload]);
}

/** An HPACK integer with an n-bit prefix (RFC 7541, 5.1). */
function hpackInteger(value: number, prefixBits: number, firstByte: number): number[] {
  const max = (1 << prefixBits) - 1;
  if (value < max) return [firstByte | value];
  const out = [firstByte | max];
  for (value -= max; value >= 128; value >>= 7) out.push((value & 0x7f) | 0x80);
  out.push(value);
  return out;
}

/**
 * A header block of literals with new names, no Huffman (RFC 7541, 6.2): with `index`, each is
 * added to the server's dynamic table (6.2.1), so that `indexedBlock` can name them later.
 */
function literalBlock(headers: ReadonlyArray<[string, string]>, index: boolean): Buffer {
  const bytes: number[] = [];
  for (const [name, value] of headers) {
    bytes.push(index ? 0x40 : 0x00, ...hpackInteger(name.length, 7, 0), ...Buffer.from(name, "latin1"));
    bytes.push(...hpackInteger(Buffer.byteLength(value), 7, 0), ...Buffer.from(value, "utf8"));
  }
  return Buffer.from(bytes);
}

/**
 * The same headers as indexed fields (6.1) once `literalBlock(headers, true)` added them: the last
 * added is dynamic entry 62 (the static table holds 61), the first 61 + headers.length. A block of
 * a few bytes, which the server decodes without parsing a string.
 */
function indexedBlock(headers: ReadonlyArray<[string, string]>): Buffer {
  return Buffer.from(headers.flatMap((_, i) => hpackInteger(61 + headers.length - i, 7, 0x80)));
}

interface Pending {
  resolve(): void;
  reject(err: Error): void;
  /** Whether a DATA frame (the answer's message) arrived. */
  answered: boolean;
}

class Connection {
  private readonly socket: Socket;
  private readonly pending = new Map<number, Pending>();
  /** The one path whose headers are in the server's dynamic table, and their indexed block. */
  private indexed: { path: string; block: Buffer } | null = null;
  private nextStream = 1;
  private sendWindow = 65_535;
  private readonly queued: Array<{ bytes: Buffer; data: number }> = [];
  private buffered = Buffer.alloc(0);
  private failed: Error | null = null;
  private corked = false;

  constructor(
    private readonly port: number,
    private readonly headers: Record<string, string>,
  ) {
    this.socket = connect(port, "127.0.0.1");
    this.socket.setNoDelay(true);
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(SETTINGS_ENABLE_PUSH, 0);
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(SETTINGS_INITIAL_WINDOW_SIZE, 6);
    settings.writeUInt32BE(STREAM_WINDOW, 8);
    const increment = Buffer.alloc(4);
    increment.writeUInt32BE(CONNECTION_WINDOW_EXTRA, 0);
    this.socket.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0, settings), frame(WINDOW_UPDATE, 0, 0, increment)]));
    this.socket.on("data", (chunk: Buffer) => this.read(chunk));
    this.socket.on("error", (err) => this.fail(err));
    this.socket.on("close", () => this.fail(new Error("connection closed")));
  }

  call(path: string, message: Uint8Array): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const id = this.nextStream;
    this.nextStream += 2;
    const block = this.headerBlock(path);
    const body = Buffer.from(grpcFrame(message));
    const bytes = Buffer.concat([frame(HEADERS, END_HEADERS, id, block), frame(DATA, END_STREAM, id, body)]);
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, answered: false });
      this.send(bytes, body.length);
    });
  }

  /** The first path called is added to the server's table and named by index afterwards; others go as plain literals. */
  private headerBlock(path: string): Buffer {
    if (this.indexed?.path === path) return this.indexed.block;
    const headers: Array<[string, string]> = [
      [":method", "POST"],
      [":scheme", "http"],
      [":path", path],
      [":authority", `127.0.0.1:${this.port}`],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ...Object.entries(this.headers),
    ];
    if (this.indexed) return literalBlock(headers, false);
    this.indexed = { path, block: indexedBlock(headers) };
    return literalBlock(headers, true);
  }

  close(): void {
    this.socket.end(frame(GOAWAY, 0, 0, Buffer.alloc(8)));
  }

  /** DATA counts against the connection's send window (stream windows are far above one message). */
  private send(bytes: Buffer, data: number): void {
    if (this.queued.length || data > this.sendWindow) {
      this.queued.push({ bytes, data });
      return;
    }
    this.sendWindow -= data;
    // Calls made in one tick (answers arrive together, and the next calls follow them) leave in one
    // write, as node:http2 sends them: a write per call costs the server a read per call.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(bytes);
  }

  private read(chunk: Buffer): void {
    let buf = this.buffered.length ? Buffer.concat([this.buffered, chunk]) : chunk;
    let at = 0;
    while (buf.length - at >= 9) {
      const length = buf.readUIntBE(at, 3);
      if (buf.length - at < 9 + length) break;
      const type = buf[at + 3];
      const flags = buf[at + 4];
      const stream = buf.readUInt32BE(at + 5) & 0x7fffffff;
      const payload = buf.subarray(at + 9, at + 9 + length);
      at += 9 + length;
      this.onFrame(type, flags, stream, payload);
    }
    buf = buf.subarray(at);
    this.buffered = buf.length ? Buffer.from(buf) : Buffer.alloc(0);
  }

  private onFrame(type: number, flags: number, stream: number, payload: Buffer): void {
    switch (type) {
      case DATA:
        if (payload.length) {
          const call = this.pending.get(stream);
          if (call) call.answered = true;
        }
        if (flags & END_STREAM) this.settle(stream, null);
        return;
      case HEADERS:
        if (flags & END_STREAM) this.settle(stream, null);
        return;
      case RST_STREAM:
        this.settle(stream, new Error(`stream reset, HTTP/2 error ${payload.readUInt32BE(0)}`));
        return;
      case SETTINGS:
        if (!(flags & ACK)) this.socket.write(frame(SETTINGS, ACK, 0, Buffer.alloc(0)));
        return;
      case PING:
        if (!(flags & ACK)) this.socket.write(frame(PING, ACK, 0, Buffer.from(payload)));
        return;
      case WINDOW_UPDATE:
        if (stream === 0) {
          this.sendWindow += payload.readUInt32BE(0) & 0x7fffffff;
          while (this.queued.length && this.queued[0].data <= this.sendWindow) {
            const next = this.queued.shift()!;
            this.sendWindow -= next.data;
            this.socket.write(next.bytes);
          }
        }
        return;
      case GOAWAY:
        this.fail(new Error(`GOAWAY, HTTP/2 error ${payload.readUInt32BE(4)}`));
        return;
    }
  }

  private settle(stream: number, err: Error | null): void {
    const call = this.pending.get(stream);
    if (!call) return;
    this.pending.delete(stream);
    if (err) call.reject(err);
    else if (!call.answered) call.reject(new Error("answered without a message: a gRPC error status (trailers only)"));
    else call.resolve();
  }

  private fail(err: Error): void {
    this.failed ??= err;
    for (const call of this.pending.values()) call.reject(err);
    this.pending.clear();
  }
}

/** `connections` HTTP/2 connections over loopback, used in turn. */
export function grpcFrameClient(port: number, headers: Record<string, string>, connections = 2): GrpcFrameClient {
  const all = Array.from({ length: connections }, () => new Connection(port, headers));
  let turn = 0;
  return {
    call: (path, message, connection = turn++) => all[connection % all.length].call(path, message),
    close: () => all.forEach((c) => c.close()),
  };
}

import { toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/**
 * Answers a service gives again and again unchanged (a replayed Respond's `already_recorded`
 * record), marked so that the gRPC door encodes each once. Only marked messages are kept, so the
 * answers of fresh requests, each new, cost one lookup and are never held.
 */
const repeated = new WeakSet<object>();
const encodings = new WeakMap<object, Buffer>();

/** Marks `message` as one that will be answered again; it must not change afterwards. */
export function answeredRepeatedly<T extends object>(message: T): T {
  repeated.add(message);
  return message;
}

/** The binary encoding of an answer; a marked one's is kept with it. */
export function encodeAnswer<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Buffer {
  const kept = encodings.get(message);
  if (kept) return kept;
  const bytes = Buffer.from(toBinary(schema, message));
  if (repeated.has(message)) encodings.set(message, bytes);
  return bytes;
}

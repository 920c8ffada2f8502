import { toBinary, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/**
 * Answers a service gives again and again unchanged (a replayed Respond's `already_recorded`
 * record), kept encoded and sent by the gRPC door as they are. Only such answers are registered,
 * so the answers of fresh requests, each new, cost one lookup.
 */
const encodings = new WeakMap<object, Buffer>();

/** `message`, which the gRPC door will send as `bytes`: its binary encoding, which it must be. */
export function encodedAs<T extends object>(message: T, bytes: Buffer): T {
  encodings.set(message, bytes);
  return message;
}

/** The binary encoding of an answer: the registered one, else encoded now. */
export function encodeAnswer<Desc extends DescMessage>(schema: Desc, message: MessageShape<Desc>): Buffer {
  return encodings.get(message) ?? Buffer.from(toBinary(schema, message));
}

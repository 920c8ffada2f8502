import * as grpc from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation } from "grpc-health-check";
import { fromBinary, toBinary, type DescFile, type DescMethod } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { CallInfo } from "../platform/context.js";
import { AppError } from "../platform/errors.js";
import { GRPC_CODES, toAppError } from "./error-mapping.js";
import { payloadTooLarge, requestIdOf, type Gateway } from "./gateway.js";

function callInfo(call: grpc.ServerUnaryCall<unknown, unknown>): CallInfo {
  return {
    header(name) {
      const v = call.metadata.get(name)[0];
      return v === undefined ? undefined : String(v);
    },
    remoteAddress: call.getPeer().replace(/^ipv[46]:/, "").replace(/:\d+$/, ""),
  };
}

/**
 * Server reflection reads serialized FileDescriptorProtos; protobuf-es keeps them on every generated
 * file, so the served services and their dependencies are described without proto-loader.
 */
function reflectionPackage(gateway: Gateway): ConstructorParameters<typeof ReflectionService>[0] {
  const files = new Map<string, DescFile>();
  const add = (file: DescFile) => {
    if (files.has(file.name)) return;
    files.set(file.name, file);
    file.dependencies.forEach(add);
  };
  gateway.registrations.forEach((r) => add(r.service.file));
  const fileDescriptorProtos = [...files.values()].map((f) => Buffer.from(toBinary(FileDescriptorProtoSchema, f.proto)));
  return { all: { format: "Protocol Buffer 3 DescriptorProto", type: {}, fileDescriptorProtos } } as never;
}

/**
 * The native gRPC door: services built from the protobuf-es descriptors (toBinary/fromBinary),
 * plus the standard health service and server reflection so grpcurl and buf curl work.
 */
export function createGrpcServer(gateway: Gateway): { server: grpc.Server; health: HealthImplementation } {
  const methods = gateway.registrations.flatMap((r) => r.service.methods);
  const maxBody = Math.max(...methods.map((m) => gateway.policy(m).maxBodyBytes));
  const server = new grpc.Server({ "grpc.max_receive_message_length": maxBody });
  for (const { service } of gateway.registrations) {
    const definition: Record<string, grpc.MethodDefinition<Buffer, unknown>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue;
      definition[method.localName] = {
        path: `/${service.typeName}/${method.name}`,
        requestStream: false,
        responseStream: false,
        // Decoding happens in the handler, so a malformed message is INVALID_ARGUMENT, not INTERNAL.
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (m: unknown) => Buffer.from(toBinary(method.output, m as never)),
        responseDeserialize: (b: Buffer) => fromBinary(method.output, b),
      };
      impl[method.localName] = unaryHandler(gateway, method);
    }
    server.addService(definition, impl);
  }
  new ReflectionService(reflectionPackage(gateway)).addToServer(server);
  const health = new HealthImplementation({ "": "SERVING" });
  health.addToServer(server);
  return { server, health };
}

function unaryHandler(gateway: Gateway, method: DescMethod): grpc.handleUnaryCall<Buffer, unknown> {
  const limit = gateway.policy(method).maxBodyBytes;
  return async (call, callback) => {
    const info = callInfo(call);
    const requestId = requestIdOf(info);
    try {
      const result = await gateway.invoke(
        method,
        () => {
          if (call.request.length > limit) throw payloadTooLarge(limit);
          try {
            return fromBinary(method.input, call.request);
          } catch (err) {
            throw new AppError({ code: "INVALID_ARGUMENT", reason: "MALFORMED_MESSAGE", message: `Malformed ${method.input.typeName}: ${(err as Error).message}` });
          }
        },
        { call: info, http: null, requestId },
      );
      const md = new grpc.Metadata();
      md.set("x-request-id", result.requestId);
      if (result.rateLimit) {
        md.set("x-ratelimit-limit", String(result.rateLimit.limit));
        md.set("x-ratelimit-remaining", String(result.rateLimit.remaining));
      }
      call.sendMetadata(md);
      callback(null, result.response);
    } catch (err) {
      const app = toAppError(err, gateway.logger, requestId);
      const md = new grpc.Metadata();
      md.set("x-error-reason", app.reason);
      md.set("x-request-id", requestId);
      if (typeof app.details.retryAfterSeconds === "number") md.set("retry-after", String(app.details.retryAfterSeconds));
      callback({ code: GRPC_CODES[app.code], details: app.message, metadata: md });
    }
  };
}

export function bindGrpc(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
}

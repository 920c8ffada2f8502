import * as grpc from "@grpc/grpc-js";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation } from "grpc-health-check";
import { fromBinary, toBinary, type DescFile, type DescMethod } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { file_grpc_health_v1_health } from "../../gen/grpc/health/v1/health_pb.js";
import type { CallInfo } from "../platform/context.js";
import { GRPC_CODES, errorHeaders, rateLimitHeaders, toAppError } from "./error-mapping.js";
import { payloadTooLarge, requestIdOf, type Gateway } from "./gateway.js";
import { GRPC_SERVER_OPTIONS } from "./grpc-options.js";
import { readBinary } from "./message-codec.js";
import { encodeAnswer } from "../platform/repeated-answers.js";
import { inRequestSpan } from "../platform/tracing.js";

/**
 * The caller as a gRPC call shows it. A class, not an object literal with a getter: V8 gives each
 * such literal a hidden class of its own, allocated in the old generation, whose accessor holds
 * the call; every call's objects then survived to the next full collection, about 5 KB a request
 * promoted, and the full collections this made were the tail of Recommend's latency
 * (docs/performance.md, seventeenth session).
 */
class GrpcCallInfo implements CallInfo {
  constructor(private readonly call: grpc.ServerUnaryCall<unknown, unknown>) {}

  header(name: string): string | undefined {
    const v = this.call.metadata.get(name)[0];
    return v === undefined ? undefined : String(v);
  }

  /** Formatted when read: only the rate limits that key on the address read it (CallerSubject, gateway.ts). */
  get remoteAddress(): string {
    return this.call.getPeer().replace(/^ipv[46]:/, "").replace(/:\d+$/, "");
  }
}

/**
 * Server reflection reads serialized FileDescriptorProtos; protobuf-es keeps them on every generated
 * file, so the served services and their dependencies are described without proto-loader. The
 * health service is described from its vendored proto (grpc-health-check's own descriptor uses
 * relative type names that reflection clients reject), so that `grpc.health.v1.Health/Check` works too.
 */
function reflectionPackage(gateway: Gateway): ConstructorParameters<typeof ReflectionService>[0] {
  const files = new Map<string, DescFile>();
  const add = (file: DescFile) => {
    if (files.has(file.name)) return;
    files.set(file.name, file);
    file.dependencies.forEach(add);
  };
  gateway.registrations.forEach((r) => add(r.service.file));
  add(file_grpc_health_v1_health);
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
  const server = new grpc.Server({ ...GRPC_SERVER_OPTIONS, "grpc.max_receive_message_length": maxBody });
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
        responseSerialize: (m: unknown) => encodeAnswer(method.output, m as never),
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
  return (call, callback) => {
    const info = new GrpcCallInfo(call);
    const requestId = requestIdOf(info);
    return inRequestSpan(`${method.parent.typeName}/${method.name}`, "grpc", info, async () => {
      try {
        const result = await gateway.invoke(
          method,
          () => {
            if (call.request.length > limit) throw payloadTooLarge(limit);
            return readBinary(method.input, call.request);
          },
          { door: "grpc", call: info, http: null, requestId },
        );
        call.sendMetadata(metadata({ "x-request-id": result.requestId, ...rateLimitHeaders(result.rateLimit) }));
        callback(null, result.response);
      } catch (err) {
        const app = toAppError(err, gateway.logger, requestId);
        callback({ code: GRPC_CODES[app.code], details: app.message, metadata: metadata(errorHeaders(app, requestId)) });
      }
    });
  };
}

function metadata(values: Record<string, string>): grpc.Metadata {
  const md = new grpc.Metadata();
  for (const [key, value] of Object.entries(values)) md.set(key, value);
  return md;
}

export function bindGrpc(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
  );
}

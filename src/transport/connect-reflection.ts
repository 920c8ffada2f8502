import { create, createRegistry, toBinary, type DescFile, type DescService, type MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import type { ConnectRouter } from "@connectrpc/connect";
import {
  ServerReflection,
  ServerReflectionResponseSchema,
  type ServerReflectionRequest,
} from "../../gen/grpc/reflection/v1/reflection_pb.js";

/** gRPC status numbers the reflection protocol reports in its error responses. */
const NOT_FOUND = 5;
const UNIMPLEMENTED = 12;

/** Every file a set of services needs, each once, dependencies included. */
export function filesOf(services: DescService[], extra: DescFile[] = []): DescFile[] {
  const files = new Map<string, DescFile>();
  const add = (file: DescFile) => {
    if (files.has(file.name)) return;
    files.set(file.name, file);
    file.dependencies.forEach(add);
  };
  services.forEach((s) => add(s.file));
  extra.forEach(add);
  return [...files.values()];
}

/**
 * gRPC server reflection (v1) answered from the protobuf-es descriptors, for the HTTP door: so that
 * `buf curl http://host:8080/api/v1/<package.Service>/<Method>` finds the schema over Connect (h2c)
 * just as grpcurl does on the native gRPC port.
 */
export function registerConnectReflection(router: ConnectRouter, services: DescService[], extra: DescFile[] = []): void {
  const files = filesOf(services, extra);
  const registry = createRegistry(...files);
  const byName = new Map(files.map((f) => [f.name, f]));
  const serviceNames = [...services.map((s) => s.typeName), ServerReflection.typeName];
  const encoded = new Map(files.map((f) => [f.name, toBinary(FileDescriptorProtoSchema, f.proto)]));

  /** The file and everything it imports, the file first, as reflection clients expect. */
  const withDependencies = (file: DescFile): Uint8Array[] => filesOf([], [file]).map((f) => encoded.get(f.name)!);

  const fileOfSymbol = (symbol: string): DescFile | undefined => {
    const direct = registry.get(symbol);
    if (direct && "file" in direct) return direct.file;
    // `package.Service.Method` and `package.Message.field` name a member of their parent.
    const parent = registry.get(symbol.slice(0, symbol.lastIndexOf(".")));
    return parent && "file" in parent ? parent.file : undefined;
  };

  const answer = (req: ServerReflectionRequest): MessageInitShape<typeof ServerReflectionResponseSchema>["messageResponse"] => {
    const notFound = (what: string) => ({ case: "errorResponse" as const, value: { errorCode: NOT_FOUND, errorMessage: `${what} not found` } });
    switch (req.messageRequest.case) {
      case "listServices":
        return { case: "listServicesResponse", value: { service: serviceNames.map((name) => ({ name })) } };
      case "fileContainingSymbol": {
        const file = fileOfSymbol(req.messageRequest.value);
        return file ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file) } } : notFound(`symbol ${req.messageRequest.value}`);
      }
      case "fileByFilename": {
        const file = byName.get(req.messageRequest.value);
        return file ? { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file) } } : notFound(`file ${req.messageRequest.value}`);
      }
      default:
        return { case: "errorResponse", value: { errorCode: UNIMPLEMENTED, errorMessage: `${req.messageRequest.case ?? "empty request"} is not supported` } };
    }
  };

  router.service(ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        yield create(ServerReflectionResponseSchema, { validHost: req.host, originalRequest: req, messageResponse: answer(req) });
      }
    },
  });
}

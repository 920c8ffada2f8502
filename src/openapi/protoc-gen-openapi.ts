import { create, createFileRegistry } from "@bufbuild/protobuf";
import { CodeGeneratorResponse_Feature, CodeGeneratorResponseSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { runNodeJs, type Plugin } from "@bufbuild/protoplugin";
import { openApiDocument } from "./openapi-document.js";

/**
 * A buf plugin (buf.gen.yaml, `strategy: all`, so that one request holds every file) writing
 * `openapi/openapi.json`: the OpenAPI document of every annotated service buf was asked to generate.
 */
const protocGenOpenApi: Plugin = {
  name: "protoc-gen-openapi",
  version: "v1",
  run(request) {
    const registry = createFileRegistry(create(FileDescriptorSetSchema, { file: request.protoFile }));
    const files = request.fileToGenerate.map((name) => {
      const file = [...registry.files].find((f) => f.proto.name === name);
      if (!file) throw new Error(`${name} is not among the request's files`);
      return file;
    });
    const document = openApiDocument(registry, files, { title: "Decisioning service", version: "v1" });
    return create(CodeGeneratorResponseSchema, {
      supportedFeatures: BigInt(CodeGeneratorResponse_Feature.PROTO3_OPTIONAL),
      file: [{ name: "openapi/openapi.json", content: `${JSON.stringify(document, null, 2)}\n` }],
    });
  },
};

runNodeJs(protocGenOpenApi);

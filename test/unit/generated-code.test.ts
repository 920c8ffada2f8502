import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

const root = join(import.meta.dirname, "../..");
const bin = join(root, "node_modules/.bin");
const buf = join(bin, "buf");
const env = { ...process.env, PATH: `${bin}:${process.env.PATH}` };

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

test("gen/ is what buf generates from proto/, gen/openapi/openapi.json included (run npm run generate and commit gen/)", () => {
  const out = mkdtempSync(join(tmpdir(), "gen-"));
  try {
    const template = readFileSync(join(root, "buf.gen.yaml"), "utf8").replace(/out: gen$/gm, `out: ${out}`);
    const templateFile = join(out, "..", `${out.split("/").pop()}.buf.gen.yaml`);
    writeFileSync(templateFile, template);
    execFileSync(buf, ["generate", "--template", templateFile], { cwd: root, stdio: "pipe", env });
    rmSync(templateFile);
    const fresh = files(out).map((f) => relative(out, f)).sort();
    assert.ok(fresh.includes("openapi/openapi.json"), "buf.gen.yaml runs the OpenAPI plugin");
    const committed = files(join(root, "gen")).map((f) => relative(join(root, "gen"), f)).sort();
    assert.deepEqual(committed, fresh);
    for (const f of fresh) {
      assert.equal(readFileSync(join(root, "gen", f), "utf8"), readFileSync(join(out, f), "utf8"), `gen/${f} is stale`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("buf lint passes", () => {
  execFileSync(buf, ["lint"], { cwd: root, stdio: "pipe", env });
});

test("the vendored upstream protos are a buf module of their own, apart from ours", () => {
  const modules = execFileSync(buf, ["config", "ls-modules", "--format", "json"], { cwd: root, encoding: "utf8", env })
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as { path: string; includes?: string[]; excludes?: string[] });
  const vendored = ["proto/google", "proto/grpc"];
  assert.deepEqual(
    modules.map((m) => ({ includes: m.includes ?? [], excludes: m.excludes ?? [] })),
    [
      { includes: [], excludes: vendored },
      { includes: vendored, excludes: [] },
    ],
  );
});

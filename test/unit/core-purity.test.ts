import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = join(import.meta.dirname, "../..");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
  });
}

/** Every module specifier a file imports or re-exports, static or dynamic. */
function specifiers(file: string): string[] {
  const source = readFileSync(file, "utf8");
  return [...source.matchAll(/(?:import|export)\s[^"';]*?from\s+"([^"]+)"|import\(\s*"([^"]+)"\s*\)/g)].map((m) => m[1] ?? m[2]);
}

test("src/core imports nothing outside src/core: no packages, no node: builtins, no gen/", () => {
  const core = join(root, "src/core");
  const offending = files(core).flatMap((file) =>
    specifiers(file)
      .filter((s) => !s.startsWith(".") || !resolve(dirname(file), s).startsWith(core + "/"))
      .map((s) => `${relative(root, file)} imports ${s}`),
  );
  assert.deepEqual(offending, []);
});

test("src/core reads no clock and no ambient randomness", () => {
  const offending = files(join(root, "src/core")).filter((file) => /Date\.now\(|new Date\(\)|Math\.random\(|performance\.now\(/.test(readFileSync(file, "utf8")));
  assert.deepEqual(offending.map((f) => relative(root, f)), []);
});

test("workers import only src/core", () => {
  const core = join(root, "src/core");
  const offending = files(join(root, "workers")).flatMap((file) =>
    specifiers(file)
      .filter((s) => !resolve(dirname(file), s).startsWith(core + "/"))
      .map((s) => `${relative(root, file)} imports ${s}`),
  );
  assert.deepEqual(offending, []);
});

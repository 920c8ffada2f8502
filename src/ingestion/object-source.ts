import { createHash } from "node:crypto";
import { createInterface } from "node:readline";
import { pipeline, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { parse } from "csv-parse";
import { globToRegExp, type SourceNode } from "../core/index.js";
import type { ObjectInfo, ObjectStore } from "./object-store.js";

/** One record read from a file: its fields (or why it could not be read) and its line number. */
export type SourceRecord = { line: number; row: Record<string, unknown>; error: null } | { line: number; row: Record<string, unknown>; error: string };

const SIDECAR = /\.(sha256|md5)$/i;
const MAX_SIDECAR_BYTES = 64 * 1024;
const MAX_MANIFEST_BYTES = 8 * 1024 * 1024;

/** A folder under the connector's prefix (which may or may not end in `/`). */
export function underPrefix(prefix: string, folder: string): string {
  return `${prefix && !prefix.endsWith("/") ? `${prefix}/` : prefix}${folder}`;
}

/** The folder a source reads: the connector's prefix, then the node's path (or its staging folder). */
export function sourceFolder(prefix: string, node: SourceNode): string {
  return underPrefix(prefix, node.path);
}

/** Where a file of the source's folder goes when atomicity moves it to `folder` (its date token filled in). */
export function movedKey(prefix: string, node: SourceNode, key: string, folder: string, at: Date): string {
  return underPrefix(prefix, withDateToken(folder, at)) + key.slice(sourceFolder(prefix, node).length);
}

/**
 * The files a source reads, in the order it reads them: objects under its folder whose key (after
 * the folder) matches `pattern`, sidecar hashes and the manifest excluded, ordered by `ordering`.
 * `latest_by_mtime` keeps only the newest file, as the feed's latest full extract.
 */
export function selectFiles(objects: readonly ObjectInfo[], folder: string, node: SourceNode): ObjectInfo[] {
  const matcher = node.pattern ? (node.pattern.type === "glob" ? globToRegExp(node.pattern.value) : new RegExp(node.pattern.value)) : null;
  const manifest = node.integrity?.manifest ? manifestKey(folder, node.integrity.manifest) : null;
  const files = objects.filter((o) => {
    const rel = o.key.slice(folder.length);
    if (!rel || rel.endsWith("/") || SIDECAR.test(rel) || o.key === manifest) return false;
    // Files already moved under success or failure folders inside the staging folder are not read again.
    if (node.atomicity && rel.includes("/")) return false;
    return matcher ? matcher.test(rel) : true;
  });
  const byName = (a: ObjectInfo, b: ObjectInfo) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
  const byTime = (a: ObjectInfo, b: ObjectInfo) => a.lastModified.getTime() - b.lastModified.getTime() || byName(a, b);
  switch (node.ordering) {
    case "latest_by_mtime":
      return files.sort(byTime).slice(-1);
    case "oldest_by_mtime":
      return files.sort(byTime).slice(0, 1);
    case "all_by_mtime":
      return files.sort(byTime);
    default:
      return files.sort(byName);
  }
}

/** The manifest's key: relative to the source folder, or from the bucket root when it starts with `/`. */
export function manifestKey(folder: string, manifest: string): string {
  return manifest.startsWith("/") ? manifest.slice(1) : `${folder}${manifest}`;
}

/** Hex digest of a stream, without holding it. */
export async function digest(stream: Readable, algorithm: "sha256" | "md5"): Promise<string> {
  const hash = createHash(algorithm);
  for await (const chunk of stream) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/** `<hex>` or `<hex>  <filename>` lines (sha256sum's format; `*` before a binary-mode name is allowed). */
export function parseHashLines(text: string): Array<{ hash: string; name: string | null }> {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const m = /^([0-9a-fA-F]+)(?:\s+\*?(.+))?$/.exec(l);
      return m ? { hash: m[1].toLowerCase(), name: m[2]?.trim() ?? null } : { hash: "", name: null };
    });
}

/**
 * The expected hash of each file under integrity checking: from its sidecar `<key>.<algorithm>` and
 * from the manifest (matched by the file's name relative to the folder, or its base name). A file
 * with neither when one is required has no expected hash: a mismatch.
 */
export async function expectedHashes(store: ObjectStore, folder: string, node: SourceNode, files: readonly ObjectInfo[]): Promise<Map<string, string[]>> {
  const integrity = node.integrity!;
  const out = new Map<string, string[]>(files.map((f) => [f.key, []]));
  if (integrity.manifest) {
    const text = await store.readText(manifestKey(folder, integrity.manifest), MAX_MANIFEST_BYTES).catch(() => "");
    const lines = parseHashLines(text);
    for (const f of files) {
      const rel = f.key.slice(folder.length);
      const base = rel.split("/").pop();
      const line = lines.find((l) => l.name === rel || l.name === base);
      out.get(f.key)!.push(line?.hash ?? "");
    }
  }
  if (integrity.sidecar) {
    for (const f of files) {
      const text = await store.readText(`${f.key}.${integrity.algorithm}`, MAX_SIDECAR_BYTES).catch(() => "");
      out.get(f.key)!.push(parseHashLines(text)[0]?.hash ?? "");
    }
  }
  return out;
}

/** A file's bytes, gunzipped when it is gzip (by name or by config). */
export function decoded(body: Readable, key: string, node: SourceNode): Readable {
  const gzip = node.compression === "gzip" || (node.compression === "auto" && /\.gz$/i.test(key));
  return gzip ? body.pipe(createGunzip()) : body;
}

const BATCH = 512;

/**
 * Records of a CSV (first line is the header) or JSON Lines file, streamed in batches (one await
 * per batch, not per row). A CSV row with the wrong number of columns and a JSON line that does not
 * parse come out with `error` set and their line number, for quarantine; a CSV that cannot be
 * tokenized at all (an unclosed quote) throws. Line numbers are counted here rather than with
 * csv-parse's `info` (a third of the parse time): a record takes one line plus the line breaks
 * inside its quoted fields, and a blank line is skipped but counted.
 */
export async function* readRecords(stream: Readable, node: SourceNode): AsyncGenerator<SourceRecord[]> {
  let batch: SourceRecord[] = [];
  if (node.format === "jsonl") {
    let line = 0;
    for await (const text of createInterface({ input: stream, crlfDelay: Infinity })) {
      line++;
      if (!text.trim()) continue;
      try {
        const value = JSON.parse(text) as unknown;
        if (typeof value !== "object" || value === null || Array.isArray(value)) batch.push({ line, row: { raw: text.slice(0, 1000) }, error: "line is not a JSON object" });
        else batch.push({ line, row: value as Record<string, unknown>, error: null });
      } catch {
        batch.push({ line, row: { raw: text.slice(0, 1000) }, error: "line is not valid JSON" });
      }
      if (batch.length >= BATCH) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length) yield batch;
    return;
  }
  // pipeline, not pipe: a body that fails mid-file (a reset connection) fails the parser, and so the read.
  const parser = pipeline(stream, parse({ delimiter: node.delimiter, relax_column_count: true, bom: true }), () => undefined);
  let header: string[] | null = null;
  let line = 0;
  for await (const records of buffered<string[]>(parser)) {
    for (const record of records) {
      line++;
      const at = line;
      for (const v of record) if (v.includes("\n")) line += v.split("\n").length - 1;
      if (record.length === 1 && record[0] === "") continue;
      if (!header) {
        header = record.map((h) => h.trim());
        continue;
      }
      if (record.length !== header.length) {
        batch.push({ line: at, row: Object.fromEntries(record.map((v, i) => [header![i] ?? `column${i + 1}`, v])), error: `expected ${header.length} columns, got ${record.length}` });
      } else {
        const row: Record<string, unknown> = {};
        for (let i = 0; i < header.length; i++) row[header[i]] = record[i];
        batch.push({ line: at, row, error: null });
      }
      if (batch.length >= BATCH) {
        yield batch;
        batch = [];
      }
    }
  }
  if (batch.length) yield batch;
}

/**
 * What an object-mode stream has buffered, an array at a time: one await per buffer, where
 * iterating the stream itself costs a promise and an iterator result per record (a tenth of the
 * bytes a loaded CSV row allocates). A stream that fails throws here; one left early is destroyed.
 */
async function* buffered<T>(stream: Readable): AsyncGenerator<T[]> {
  let failed: { error: unknown } | null = null;
  let ended = false;
  let wake: (() => void) | null = null;
  const signal = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  stream.on("readable", signal);
  stream.once("end", () => {
    ended = true;
    signal();
  });
  stream.once("error", (error) => {
    failed = { error };
    signal();
  });
  try {
    for (;;) {
      if (failed) throw (failed as { error: unknown }).error;
      const out: T[] = [];
      let record: T | null;
      while ((record = stream.read() as T | null) !== null) out.push(record);
      if (out.length) yield out;
      else if (ended) return;
      // read() returned null, so the stream emits readable, end or error next (never synchronously).
      else await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    if (!ended) stream.destroy();
  }
}

/** `{date}` (YYYY-MM-DD), `{yyyy}`, `{mm}`, `{dd}` in a folder name, in UTC. */
export function withDateToken(folder: string, at: Date): string {
  const iso = at.toISOString();
  return folder.replace(/\{date\}/g, iso.slice(0, 10)).replace(/\{yyyy\}/g, iso.slice(0, 4)).replace(/\{mm\}/g, iso.slice(5, 7)).replace(/\{dd\}/g, iso.slice(8, 10));
}

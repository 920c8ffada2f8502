import http from "node:http";
import https from "node:https";
import type { Readable } from "node:stream";
import type { ListObjectsV2CommandOutput } from "@aws-sdk/client-s3";
import { assertHostAllowed, guardedLookup, type ForbiddenAddress } from "../notifications/outbound-guard.js";

/** What a connector holds that reaching its bucket needs: its config and its opened secrets. */
export interface BucketAccess {
  bucket: string;
  region: string;
  prefix: string;
  endpoint: string;
  forcePathStyle: boolean;
  authMethod: "iam_role" | "access_keys";
  roleArn: string | null;
  externalId: string | null;
  accessKeyId: string | null;
  secretAccessKey: string | null;
}

export interface ObjectInfo {
  key: string;
  size: number;
  lastModified: Date;
}

/** How the service reaches object storage: the address rule, and where STS is for iam_role. */
export interface ObjectStoreOptions {
  forbidden: ForbiddenAddress;
  /** STS endpoint for AssumeRole (INGESTION_STS_ENDPOINT); null for AWS's regional endpoint. */
  stsEndpoint: string | null;
  timeoutMs: number;
}

/** Objects under one connector's bucket: list, read, move. Keys here are full keys (prefix included). */
export interface ObjectStore {
  list(prefix: string, max?: number): Promise<ObjectInfo[]>;
  read(key: string): Promise<Readable>;
  readText(key: string, maxBytes: number): Promise<string>;
  /** Copy then delete: S3 has no rename. */
  move(from: string, to: string): Promise<void>;
  close(): void;
}

const SESSION_NAME = "decisioning-ingestion";

/**
 * An S3 client for one connector. Every connection goes through the outbound guard: the endpoint's
 * literal address is checked first, and names are checked on every address DNS answers, for S3 and
 * for STS alike. S3-compatible stores get path-style addressing when asked and checksums only when
 * an operation requires them (most such stores reject the SDK's default CRC trailers).
 *
 * The AWS SDK is imported here, by the first connector that is created, tested or read, rather
 * than when the service starts: it takes about 10 MB of resident memory that a service whose
 * tenants load no files should not carry.
 */
export async function openObjectStore(access: BucketAccess, options: ObjectStoreOptions): Promise<ObjectStore> {
  for (const url of [access.endpoint, options.stsEndpoint]) {
    if (url) assertHostAllowed(new URL(url).hostname, options.forbidden);
  }
  const lookup = guardedLookup(options.forbidden);
  const requestHandler = {
    httpAgent: new http.Agent({ keepAlive: true, lookup }),
    httpsAgent: new https.Agent({ keepAlive: true, lookup }),
    requestTimeout: options.timeoutMs,
    connectionTimeout: options.timeoutMs,
  };
  const region = access.region || "us-east-1";
  const s3 = await import("@aws-sdk/client-s3");
  const credentials =
    access.authMethod === "access_keys"
      ? { accessKeyId: access.accessKeyId ?? "", secretAccessKey: access.secretAccessKey ?? "" }
      : (await import("@aws-sdk/credential-providers")).fromTemporaryCredentials({
          params: { RoleArn: access.roleArn ?? "", RoleSessionName: SESSION_NAME, ...(access.externalId ? { ExternalId: access.externalId } : {}) },
          clientConfig: { region, requestHandler, ...(options.stsEndpoint ? { endpoint: options.stsEndpoint } : {}) },
        });
  const client = new s3.S3Client({
    region,
    credentials,
    requestHandler,
    maxAttempts: 2,
    ...(access.endpoint ? { endpoint: access.endpoint } : {}),
    forcePathStyle: access.forcePathStyle,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const Bucket = access.bucket;
  const store: ObjectStore = {
    async list(prefix, max = Infinity) {
      const out: ObjectInfo[] = [];
      let token: string | undefined;
      do {
        const page: ListObjectsV2CommandOutput = await client.send(new s3.ListObjectsV2Command({ Bucket, Prefix: prefix, ContinuationToken: token, MaxKeys: Math.min(1000, max - out.length) }));
        for (const o of page.Contents ?? []) {
          if (o.Key) out.push({ key: o.Key, size: o.Size ?? 0, lastModified: o.LastModified ?? new Date(0) });
        }
        token = page.IsTruncated && out.length < max ? page.NextContinuationToken : undefined;
      } while (token);
      return out;
    },
    async read(key) {
      const res = await client.send(new s3.GetObjectCommand({ Bucket, Key: key }));
      return res.Body as Readable;
    },
    async readText(key, maxBytes) {
      const body = await store.read(key);
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of body) {
        size += (chunk as Buffer).length;
        if (size > maxBytes) {
          body.destroy();
          throw new Error(`${key} is larger than ${maxBytes} bytes`);
        }
        chunks.push(chunk as Buffer);
      }
      return Buffer.concat(chunks).toString("utf8");
    },
    async move(from, to) {
      if (from === to) return;
      const source = `${Bucket}/${from.split("/").map(encodeURIComponent).join("/")}`;
      await client.send(new s3.CopyObjectCommand({ Bucket, Key: to, CopySource: source }));
      await client.send(new s3.DeleteObjectCommand({ Bucket, Key: from }));
    },
    close() {
      client.destroy();
      requestHandler.httpAgent.destroy();
      requestHandler.httpsAgent.destroy();
    },
  };
  return store;
}

/** A failure of object storage as a connector's lastError: the SDK's error name and message, no internals. */
export function describeStorageError(err: unknown): string {
  const e = err as { name?: string; message?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  if (e?.name === "OutboundBlockedError") return e.message ?? "endpoint refused";
  const status = e?.$metadata?.httpStatusCode;
  const name = e?.Code ?? e?.name ?? "Error";
  const message = (e?.message ?? String(err)).replace(/\s+/g, " ").slice(0, 300);
  return `${name}${status ? ` (HTTP ${status})` : ""}: ${message}`;
}

import { DeleteObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import type { Config, OutboundConfig } from "../../src/config.js";
import { rest, type RestResponse } from "./clients.js";
import { startTestService, type TestService } from "./service.js";
import { startLocalS3, startLocalSts, type LocalS3, type LocalSts } from "./s3-server.js";

export const KEY = { id: "k1", secret: "ingestion-test-key-0123456789abcdef0123" };
const OUTBOUND: OutboundConfig = { allowPrivate: true, maxAttempts: 1, backoffMs: 20, backoffMaxMs: 100, timeoutMs: 5000 };
/** The service's own identity, which assumes roles at the local STS (the SDK's default provider reads it). */
export const CALLER = { accessKeyId: "AKIASERVICECALLER01", secretAccessKey: "service-caller-secret-0123456789" };

type Tenant = { tenantId: string; userId: string; apiKey: string };

export interface IngestionHarness {
  svc: TestService;
  s3: LocalS3;
  sts: LocalSts;
  admin: Tenant;
  other: Tenant;
  call(method: string, path: string, body?: unknown, key?: string): Promise<RestResponse>;
  /** Puts an object into the `feeds` bucket of the local S3. */
  put(key: string, body: string | Buffer): Promise<void>;
  /** Keys of the `feeds` bucket under a prefix. */
  keys(prefix: string): Promise<string[]>;
  remove(key: string): Promise<void>;
  /** A connector body reaching the local S3 with the static keys. */
  connectorBody(fields?: Record<string, unknown>): Record<string, unknown>;
  /** The tenant's data schema in PostgreSQL. */
  dataSchema(tenantId: string): string;
  close(): Promise<void>;
}

/** The whole service with a local S3 (bucket `feeds`) and STS, and two tenants. */
export async function startIngestionHarness(overrides: Partial<Config> = {}): Promise<IngestionHarness> {
  const s3 = await startLocalS3(["feeds"]);
  process.env.AWS_ACCESS_KEY_ID = CALLER.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = CALLER.secretAccessKey;
  const sts = await startLocalSts(s3, CALLER);
  const svc = await startTestService({ settingsKeys: [KEY], outbound: OUTBOUND, ingestionStsEndpoint: sts.endpoint, ...overrides });
  const admin = await svc.createTenant();
  const other = await svc.createTenant("other");
  const client = new S3Client({
    region: "us-east-1",
    endpoint: s3.endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  let n = 0;
  return {
    svc,
    s3,
    sts,
    admin,
    other,
    call: (method, path, body, key = admin.apiKey) =>
      rest(svc.baseUrl, method, path, { key, body: body ?? (method === "GET" || method === "DELETE" ? undefined : {}), headers: method === "DELETE" ? { "x-requested-with": "test" } : {} }),
    put: async (key, body) => {
      await client.send(new PutObjectCommand({ Bucket: "feeds", Key: key, Body: body }));
    },
    keys: async (prefix) => ((await client.send(new ListObjectsV2Command({ Bucket: "feeds", Prefix: prefix }))).Contents ?? []).map((o) => o.Key!).sort(),
    remove: async (key) => {
      await client.send(new DeleteObjectCommand({ Bucket: "feeds", Key: key }));
    },
    connectorBody: (fields = {}) => ({
      name: `feed-${++n}-${Math.random().toString(36).slice(2, 6)}`,
      type: "aws_s3",
      config: { bucket: "feeds", region: "us-east-1", prefix: "", endpoint: s3.endpoint, forcePathStyle: true },
      authMethod: "access_keys",
      authConfig: { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey },
      ...fields,
    }),
    dataSchema: (tenantId) => `ingest_${tenantId.replace(/-/g, "")}`,
    close: async () => {
      client.destroy();
      await svc.stop();
      await sts.close();
      await s3.close();
    },
  };
}

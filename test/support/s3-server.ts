import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const require = createRequire(import.meta.url);
// s3rver 4.x is CommonJS; its account registry is where it looks access keys up.
const S3rver = require("@20minutes/s3rver") as new (options: Record<string, unknown>) => { configureBuckets(): Promise<unknown>; callback(): (req: IncomingMessage, res: unknown) => void };
const { DUMMY_ACCOUNT } = require("@20minutes/s3rver/lib/models/account.js") as { DUMMY_ACCOUNT: { createKeyPair(id: string, secret: string): void } };

/** Access keys a local server accepts, with the session token temporary keys must present. */
type KeyRing = Map<string, { secret: string; sessionToken: string | null }>;

const encode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * Checks an AWS Signature Version 4 `Authorization` header against the keys the server knows. It
 * stands in front of s3rver, whose own check fails the SDK's ListObjectsV2 (it signs `/<bucket>/`,
 * s3rver checks `/<bucket>`), so that a wrong secret is still refused. The payload hash is the
 * x-amz-content-sha256 header as sent.
 */
export function verifySigV4(req: IncomingMessage, keys: KeyRing, body = ""): string | null {
  const auth = String(req.headers.authorization ?? "");
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request,\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return "missing or malformed Authorization";
  const [, keyId, date, region, service, signedHeaders, signature] = m;
  const key = keys.get(keyId);
  if (!key) return "InvalidAccessKeyId";
  if (key.sessionToken !== null && req.headers["x-amz-security-token"] !== key.sessionToken) return "InvalidToken";
  const rawPath = (req.url ?? "/").split("?")[0];
  const query = (req.url ?? "").includes("?") ? (req.url ?? "").slice((req.url ?? "").indexOf("?") + 1) : "";
  const pairs = query
    .split("&")
    .filter(Boolean)
    .map((p) => {
      const i = p.indexOf("=");
      const k = decodeURIComponent(i < 0 ? p : p.slice(0, i));
      const v = i < 0 ? "" : decodeURIComponent(p.slice(i + 1));
      return [encode(k), encode(v)] as const;
    })
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  const names = signedHeaders.split(";");
  const canonicalHeaders = names.map((n) => `${n}:${String(req.headers[n] ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  const payload = String(req.headers["x-amz-content-sha256"] ?? createHash("sha256").update(body).digest("hex"));
  const canonical = [req.method, rawPath || "/", pairs.map(([k, v]) => `${k}=${v}`).join("&"), canonicalHeaders, signedHeaders, payload].join("\n");
  const amzDate = String(req.headers["x-amz-date"] ?? "");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, createHash("sha256").update(canonical).digest("hex")].join("\n");
  let k = createHmac("sha256", `AWS4${key.secret}`).update(date).digest();
  for (const part of [region, service, "aws4_request"]) k = createHmac("sha256", k).update(part).digest();
  const expected = Buffer.from(createHmac("sha256", k).update(toSign).digest("hex"));
  const got = Buffer.from(signature);
  return got.length === expected.length && timingSafeEqual(got, expected) ? null : "SignatureDoesNotMatch";
}

/** Listens on a free loopback port; `close` also ends kept-alive connections. */
async function listenLocally(server: Server): Promise<{ endpoint: string; close(): Promise<void> }> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function errorXml(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>local</RequestId></Error>`;
}

export interface LocalS3 {
  endpoint: string;
  /** Access keys that work (the static pair of the tests). */
  accessKeyId: string;
  secretAccessKey: string;
  keys: KeyRing;
  close(): Promise<void>;
}

/**
 * s3rver 4.x on a port of its own with `buckets` created, behind our SigV4 check (see verifySigV4).
 * Listings stay under 1,000 keys in the tests: s3rver's continuation tokens use DES, which Node 20's
 * OpenSSL refuses.
 */
export async function startLocalS3(buckets: string[]): Promise<LocalS3> {
  const directory = mkdtempSync(join(tmpdir(), "s3rver-"));
  const accessKeyId = `AKIA${randomBytes(6).toString("hex").toUpperCase()}`;
  const secretAccessKey = randomBytes(20).toString("base64");
  const keys: KeyRing = new Map([[accessKeyId, { secret: secretAccessKey, sessionToken: null }]]);
  DUMMY_ACCOUNT.createKeyPair(accessKeyId, secretAccessKey);
  const s3 = new S3rver({ directory, silent: true, allowMismatchedSignatures: true, configureBuckets: buckets.map((name) => ({ name })) });
  await s3.configureBuckets();
  const handler = s3.callback();
  const server: Server = createServer((req, res) => {
    const refusal = verifySigV4(req, keys);
    if (refusal) {
      req.resume();
      res.writeHead(403, { "content-type": "application/xml" }).end(errorXml(refusal, "request signature refused by the local S3 harness"));
      return;
    }
    handler(req, res);
  });
  const { endpoint, close } = await listenLocally(server);
  return {
    endpoint,
    accessKeyId,
    secretAccessKey,
    keys,
    close: async () => {
      await close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface LocalSts {
  endpoint: string;
  /** The role it lets assume, and the external id that role requires. */
  roleArn: string;
  externalId: string;
  /** Every AssumeRole call: its role, external id and whether it was granted. */
  calls: Array<{ roleArn: string; externalId: string | null; granted: boolean }>;
  close(): Promise<void>;
}

/**
 * A tiny STS: answers AssumeRole (signed with `caller` keys) for one role and external id with
 * temporary keys that the local S3 then accepts with their session token.
 */
export async function startLocalSts(s3: LocalS3, caller: { accessKeyId: string; secretAccessKey: string }): Promise<LocalSts> {
  const roleArn = "arn:aws:iam::123456789012:role/ingestion-reader";
  const externalId = `ext-${randomBytes(4).toString("hex")}`;
  const callers: KeyRing = new Map([[caller.accessKeyId, { secret: caller.secretAccessKey, sessionToken: null }]]);
  const calls: LocalSts["calls"] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const refusal = verifySigV4(req, callers, body);
      const form = new URLSearchParams(body);
      const asked = { roleArn: form.get("RoleArn") ?? "", externalId: form.get("ExternalId") };
      const granted = !refusal && form.get("Action") === "AssumeRole" && asked.roleArn === roleArn && asked.externalId === externalId;
      calls.push({ ...asked, granted });
      if (!granted) {
        res.writeHead(403, { "content-type": "text/xml" }).end(
          `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>AccessDenied</Code><Message>not authorized to assume ${asked.roleArn}</Message></Error><RequestId>local</RequestId></ErrorResponse>`,
        );
        return;
      }
      const id = `ASIA${randomBytes(6).toString("hex").toUpperCase()}`;
      const secret = randomBytes(20).toString("base64");
      const token = randomBytes(24).toString("base64");
      s3.keys.set(id, { secret, sessionToken: token });
      DUMMY_ACCOUNT.createKeyPair(id, secret);
      const expires = new Date(Date.now() + 3600_000).toISOString();
      res.writeHead(200, { "content-type": "text/xml" }).end(
        `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>${id}</AccessKeyId><SecretAccessKey>${secret}</SecretAccessKey><SessionToken>${token}</SessionToken><Expiration>${expires}</Expiration></Credentials><AssumedRoleUser><Arn>${roleArn}/decisioning-ingestion</Arn><AssumedRoleId>AROA:decisioning-ingestion</AssumedRoleId></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>local</RequestId></ResponseMetadata></AssumeRoleResponse>`,
      );
    });
  });
  return { ...(await listenLocally(server)), roleArn, externalId, calls };
}

import { createHmac, hkdfSync } from "node:crypto";
import { safeEqual } from "../platform/crypto.js";
import { isAppError, unauthenticated } from "../platform/errors.js";
import { isUuid } from "../platform/ids.js";
import type { Secrets } from "../platform/secrets.js";
import { REPORT_FORMATS, type ReportFormat } from "./report-document.js";

/** How long a signed download link in a webhook delivery works (docs/reports.md, "Delivery"). */
export const DOWNLOAD_LINK_TTL_SECONDS = 7 * 24 * 60 * 60;
/** HKDF `info`: the key signs download links and nothing else, though derived from the JWT signing secret. */
const HKDF_INFO = "decisioning-service report download links v1";
const SIGNATURE = /^[0-9a-f]{64}$/;
const UNIX_SECONDS = /^[0-9]{1,12}$/;

/** What a link grants: one format of one run of one tenant, until `expires` (unix seconds). */
export interface SignedArtifact {
  tenantId: string;
  runId: string;
  format: string;
  expires: number;
}

/** The link key for a secret: HKDF-SHA256 under a label of its own, so it is useless for anything else. */
export function downloadLinkKey(secret: string): Buffer {
  return Buffer.from(hkdfSync("sha256", Buffer.from(secret, "utf8"), Buffer.alloc(0), HKDF_INFO, 32));
}

/** Hex HMAC-SHA256 over every field the link grants; the fields cannot hold the separator. */
export function downloadLinkSignature(key: Buffer, a: SignedArtifact): string {
  return createHmac("sha256", key).update(`v1\n${a.tenantId}\n${a.runId}\n${a.format}\n${a.expires}`).digest("hex");
}

/** `<publicUrl>/api/v1/reports/runs/{id}/artifacts/{format}?tenant=…&expires=…&signature=…`. */
export function signedDownloadUrl(publicUrl: string, key: Buffer, a: SignedArtifact): string {
  const query = new URLSearchParams({ tenant: a.tenantId, expires: String(a.expires), signature: downloadLinkSignature(key, a) });
  return `${publicUrl}/api/v1/reports/runs/${a.runId}/artifacts/${a.format}?${query}`;
}

/**
 * Signs and checks the download links of webhook deliveries. The key is derived from the JWT signing
 * secret: rotating that secret already ends every session and token, and ends the links with them.
 */
export class DownloadLinks {
  constructor(
    private readonly secrets: Secrets,
    private readonly publicUrl: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * A link to one artifact, valid for DOWNLOAD_LINK_TTL_SECONDS, or null when the server has no JWT
   * signing secret (it then authenticates nobody, and the delivery still carries `downloadPath`).
   */
  link(tenantId: string, runId: string, format: ReportFormat): { url: string; expiresAt: Date } | null {
    let key: Buffer;
    try {
      key = downloadLinkKey(this.secrets.jwtSigningSecret());
    } catch (err) {
      if (isAppError(err)) return null;
      throw err;
    }
    const expires = Math.floor(this.now().getTime() / 1000) + DOWNLOAD_LINK_TTL_SECONDS;
    return { url: signedDownloadUrl(this.publicUrl, key, { tenantId, runId, format, expires }), expiresAt: new Date(expires * 1000) };
  }

  /**
   * The tenant a link's query grants `runId`'s `format` to, or a 401: DOWNLOAD_LINK_INVALID for a
   * missing, malformed or wrong signature (whatever the run, so that nothing is revealed about runs),
   * DOWNLOAD_LINK_EXPIRED for a genuine link past its time. The signature is compared in constant time.
   */
  verify(runId: string, format: string, query: URLSearchParams): string {
    const tenantId = query.get("tenant") ?? "";
    const expires = query.get("expires") ?? "";
    const signature = query.get("signature") ?? "";
    const invalid = () => unauthenticated("The download link is not one this service signed for this run and format", "DOWNLOAD_LINK_INVALID");
    if (!isUuid(tenantId) || !isUuid(runId) || !REPORT_FORMATS.includes(format as ReportFormat) || !UNIX_SECONDS.test(expires) || !SIGNATURE.test(signature)) throw invalid();
    const expected = downloadLinkSignature(downloadLinkKey(this.secrets.jwtSigningSecret()), { tenantId, runId, format, expires: Number(expires) });
    if (!safeEqual(expected, signature)) throw invalid();
    if (Number(expires) * 1000 <= this.now().getTime()) throw unauthenticated("The download link has expired; fetch the artifact with credentials or run the report again", "DOWNLOAD_LINK_EXPIRED");
    return tenantId;
  }
}

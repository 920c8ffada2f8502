import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ApiKeySummarySchema,
  CreateApiKeyResponseSchema,
  CreateOAuthClientResponseSchema,
  OAuthClientSummarySchema,
  type ApiKeySummary,
  type CreateApiKeyResponse,
  type CreateOAuthClientResponse,
  type OAuthClientSummary,
} from "../../gen/decisioning/v1/identity_pb.js";
import type { ApiKeyRow, OAuthClientRow } from "./identity-store.js";

const ts = (d: Date | null) => (d ? timestampFromDate(d) : undefined);

export const KEY_WARNING = "Store this key securely: it is shown only once and cannot be recovered.";
export const SECRET_WARNING = "Store this client secret securely: it is shown only once and cannot be recovered.";

export function toCreatedApiKey(row: ApiKeyRow, rawKey: string): CreateApiKeyResponse {
  return create(CreateApiKeyResponseSchema, {
    id: row.id,
    name: row.name,
    key: rawKey,
    prefix: row.prefix,
    expiresAt: ts(row.expires_at),
    createdAt: ts(row.created_at),
    scopes: row.scopes,
    warning: KEY_WARNING,
  });
}

export function toApiKeySummary(row: ApiKeyRow): ApiKeySummary {
  return create(ApiKeySummarySchema, {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes,
    createdAt: ts(row.created_at),
    expiresAt: ts(row.expires_at),
    lastUsedAt: ts(row.last_used_at),
    revokedAt: ts(row.revoked_at),
    revokeReason: row.revoke_reason ?? undefined,
  });
}

export function toCreatedOAuthClient(row: OAuthClientRow, rawSecret: string): CreateOAuthClientResponse {
  return create(CreateOAuthClientResponseSchema, {
    id: row.id,
    name: row.name,
    clientId: row.client_id,
    clientSecret: rawSecret,
    scopes: row.scopes,
    createdAt: ts(row.created_at),
    warning: SECRET_WARNING,
  });
}

export function toOAuthClientSummary(row: OAuthClientRow): OAuthClientSummary {
  return create(OAuthClientSummarySchema, {
    id: row.id,
    name: row.name,
    clientIdPrefix: row.client_id.slice(0, 12),
    clientId: row.client_id,
    scopes: row.scopes,
    createdAt: ts(row.created_at),
    revokedAt: ts(row.revoked_at),
  });
}

import { create, toJson } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";
import { SsoConfigSchema, type SsoConfig } from "../../gen/decisioning/v1/sso_pb.js";
import { isActive, type SsoSettings, type SsoSettingsPatch } from "./sso-config-rules.js";
import type { SsoConfigRow, SsoConfigWrite } from "./sso-config-store.js";

export function toSettings(row: SsoConfigRow): SsoSettings {
  return {
    provider: row.provider,
    enabled: row.enabled,
    samlEntityId: row.saml_entity_id,
    samlSsoUrl: row.saml_sso_url,
    samlAcsUrl: row.saml_acs_url,
    oidcIssuer: row.oidc_issuer,
    oidcClientId: row.oidc_client_id,
    oidcScopes: row.oidc_scopes,
    defaultRole: row.default_role,
    allowedDomains: row.allowed_domains,
    autoProvision: row.auto_provision,
    enforceForAllUsers: row.enforce_for_all_users,
  };
}

export function toWrite(tenantId: string, s: SsoSettings, secret: { ciphertext: string; keyId: string } | null): SsoConfigWrite {
  return {
    tenant_id: tenantId,
    provider: s.provider,
    enabled: s.enabled,
    saml_entity_id: s.samlEntityId,
    saml_sso_url: s.samlSsoUrl,
    saml_acs_url: s.samlAcsUrl,
    oidc_issuer: s.oidcIssuer,
    oidc_client_id: s.oidcClientId,
    oidc_client_secret: secret?.ciphertext ?? null,
    oidc_client_secret_key_id: secret?.keyId ?? null,
    oidc_scopes: s.oidcScopes,
    default_role: s.defaultRole,
    allowed_domains: s.allowedDomains,
    auto_provision: s.autoProvision,
    enforce_for_all_users: s.enforceForAllUsers,
  };
}

/** Spec 4.19 GET: the configuration without its secret, or {configured: false, provider: "none"}. */
export function toSsoConfigMessage(row: SsoConfigRow | null): SsoConfig {
  if (!row) return create(SsoConfigSchema, { configured: false, provider: "none" });
  const s = toSettings(row);
  return create(SsoConfigSchema, {
    configured: true,
    provider: s.provider,
    enabled: s.enabled,
    samlEntityId: s.samlEntityId,
    samlSsoUrl: s.samlSsoUrl,
    samlAcsUrl: s.samlAcsUrl,
    oidcIssuer: s.oidcIssuer,
    oidcClientId: s.oidcClientId,
    oidcScopes: s.oidcScopes,
    defaultRole: s.defaultRole,
    allowedDomains: create(ListValueSchema, { values: s.allowedDomains.map((d) => create(ValueSchema, { kind: { case: "stringValue", value: d } })) }),
    autoProvision: s.autoProvision,
    enforceForAllUsers: s.enforceForAllUsers,
    active: isActive(s),
    oidcClientSecretSet: row.oidc_client_secret !== null,
  });
}

/** The fields a `configure` request set; read-only fields (configured, active, ...) are ignored. */
export function toPatch(m: SsoConfig): SsoSettingsPatch {
  return {
    provider: m.provider,
    enabled: m.enabled,
    samlEntityId: m.samlEntityId,
    samlSsoUrl: m.samlSsoUrl,
    samlAcsUrl: m.samlAcsUrl,
    oidcIssuer: m.oidcIssuer,
    oidcClientId: m.oidcClientId,
    oidcScopes: m.oidcScopes,
    defaultRole: m.defaultRole,
    allowedDomains: m.allowedDomains ? m.allowedDomains.values.map((v) => toJson(ValueSchema, v)) : undefined,
    autoProvision: m.autoProvision,
    enforceForAllUsers: m.enforceForAllUsers,
  };
}

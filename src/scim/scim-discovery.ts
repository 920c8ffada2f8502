import SCIMMY from "scimmy";
import { SCIM_BASE_PATH, scimError } from "./scim-mapper.js";
import { SCIM_MAX_RESULTS } from "./scim-service.js";

/**
 * scimmy keeps its resource declarations and service-provider configuration in one module-wide
 * store; this module fills it once per process. Users carry the enterprise extension because Entra
 * ID's default attribute mappings send it (accepted, not kept: docs/scim.md).
 */
if (!SCIMMY.Resources.declared("User")) {
  SCIMMY.Resources.declare(SCIMMY.Resources.User.extend(SCIMMY.Schemas.EnterpriseUser, false));
  SCIMMY.Resources.declare(SCIMMY.Resources.Group);
  for (const resource of [SCIMMY.Resources.User, SCIMMY.Resources.Group, SCIMMY.Resources.ServiceProviderConfig, SCIMMY.Resources.ResourceType, SCIMMY.Resources.Schema]) {
    resource.basepath(SCIM_BASE_PATH);
  }
  SCIMMY.Config.set({
    patch: { supported: true },
    filter: { supported: true, maxResults: SCIM_MAX_RESULTS },
    bulk: { supported: false },
    sort: { supported: false },
    etag: { supported: false },
    changePassword: { supported: false },
    authenticationSchemes: [
      {
        type: "oauthbearertoken",
        name: "API key as a bearer token",
        description: "Authorization: Bearer <API key>, a key with the scim scope minted by a tenant admin (POST /api/v1/api-keys)",
        primary: true,
      },
    ],
  });
}

/** GET of a discovery resource (RFC 7644 4): `ServiceProviderConfig`, `ResourceTypes[/<id>]`, `Schemas[/<id>]`. */
export async function readDiscovery(kind: string, id: string | undefined): Promise<unknown> {
  switch (kind) {
    case "ServiceProviderConfig":
      if (id !== undefined) break;
      return new SCIMMY.Resources.ServiceProviderConfig().read();
    case "ResourceTypes":
      return new SCIMMY.Resources.ResourceType(id).read();
    case "Schemas":
      return new SCIMMY.Resources.Schema(id).read();
  }
  throw scimError(404, null, `${kind}${id === undefined ? "" : `/${id}`} not found`);
}

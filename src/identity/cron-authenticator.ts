import type { CallInfo } from "../platform/context.js";
import { safeEqual } from "../platform/crypto.js";
import { unauthenticated } from "../platform/errors.js";
import type { Authenticated } from "./authenticator.js";

/**
 * The cron routes' credential (spec 5.6): `Authorization: Bearer <CRON_SECRET>`, the convention of
 * hosted cron services, compared in constant time. With no secret configured nothing can call them
 * (401 CRON_SECRET_NOT_SET), so an operator who forgot it learns why instead of being let in.
 */
export class CronAuthenticator {
  constructor(private readonly secret: string | null) {}

  authenticate(call: CallInfo): Authenticated {
    if (this.secret === null) {
      throw unauthenticated("The cron routes are disabled: CRON_SECRET is not set on the server", "CRON_SECRET_NOT_SET");
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(call.header("authorization") ?? "");
    if (!match || !safeEqual(match[1], this.secret)) {
      throw unauthenticated("Missing or wrong cron secret: send Authorization: Bearer <CRON_SECRET>", "INVALID_CRON_SECRET");
    }
    return { tenantId: "", userId: null, actorName: "cron", role: "viewer", principal: { kind: "cron" } };
  }
}

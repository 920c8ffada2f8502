import type { Logger } from "../platform/logger.js";
import type { RateLimitPolicy } from "../platform/rate-limit-policy.js";
import { requestIdOf } from "../transport/gateway.js";
import { rateLimitHeaders, toAppError } from "../transport/error-mapping.js";
import { httpCallInfo, sendError, sendHttpBody } from "../transport/http-io.js";
import type { HttpRoute } from "../transport/http-routes.js";
import type { DownloadLinks } from "./report-download-links.js";
import type { ReportRunService } from "./report-run-service.js";

const RUNS_PREFIX = "/api/v1/reports/runs/";
const ARTIFACT_PATH = /^\/api\/v1\/reports\/runs\/([^/]+)\/artifacts\/([^/]+)$/;

/**
 * `GET /api/v1/reports/runs/{id}/artifacts/{format}?tenant=…&expires=…&signature=…`: the signed form
 * of the artifact download, for webhook receivers that hold no credentials of the tenant. A method
 * of the gateway is either authenticated or public, so the signed form is this route: it claims only
 * GETs of that path that carry a `signature`, and every other request (the authenticated download
 * among them) goes on to the generated route. The signature alone decides (credentials sent beside it
 * are not read); the tenant it names is then rate-limited as on every route, and the file is the
 * one the authenticated route answers (ReportRunService.artifactFile), with the same headers.
 */
export function createSignedDownloadRoute(links: DownloadLinks, runs: ReportRunService, rateLimits: RateLimitPolicy, logger: Logger): HttpRoute {
  return {
    path: RUNS_PREFIX,
    claims(req) {
      if (req.method !== "GET") return false;
      const url = new URL(req.url ?? "/", "http://download.invalid");
      return ARTIFACT_PATH.test(url.pathname) && url.searchParams.has("signature");
    },
    async handle(req, res) {
      const call = httpCallInfo(req);
      const requestId = requestIdOf(call);
      res.setHeader("x-request-id", requestId);
      try {
        const url = new URL(req.url ?? "/", "http://download.invalid");
        const [, runId, format] = ARTIFACT_PATH.exec(url.pathname)!;
        const tenantId = links.verify(runId, format, url.searchParams);
        const { result, rateLimit } = await rateLimits.limit(null, { tenantId, clientKey: "", source: call.remoteAddress }, () => runs.artifactFile(tenantId, runId, format));
        for (const [name, value] of Object.entries(rateLimitHeaders(rateLimit))) res.setHeader(name, value);
        sendHttpBody(res, 200, result);
      } catch (err) {
        sendError(res, toAppError(err, logger, requestId), "problem", requestId);
      }
    },
  };
}

import type { DeliveryResult, Dispatcher } from "../notifications/outbound.js";
import type { RenderedArtifact } from "./report-document.js";
import type { DownloadLinks } from "./report-download-links.js";
import type { StoredDelivery } from "./report-mapper.js";

/** Artifacts up to this size travel inside a webhook's JSON (base64); larger ones as their download links only. */
export const WEBHOOK_INLINE_MAX_BYTES = 256 * 1024;

export interface DeliveredRun {
  tenantId: string;
  runId: string;
  templateId: string;
  scheduleId: string | null;
  title: string;
  triggeredBy: "manual" | "cron";
  period: { from: Date; to: Date } | null;
  timeZone: string;
  artifacts: readonly RenderedArtifact[];
}

/**
 * Sends a run to its destinations through the one dispatcher (docs/reports.md, "Delivery"): e-mail
 * with every artifact attached; webhooks with the run's metadata, each artifact's authenticated
 * download path and signed download link (report-download-links.ts), and the artifact itself in
 * base64 when it is at most WEBHOOK_INLINE_MAX_BYTES. One
 * result per destination; a failed destination never stops the others (the dispatcher sends each
 * on its own and never throws for a failed delivery).
 */
export async function deliverRun(dispatcher: Dispatcher, links: DownloadLinks, destinations: readonly string[], run: DeliveredRun): Promise<StoredDelivery[]> {
  if (!destinations.length) return [];
  const period = run.period ? `${run.period.from.toISOString()} to ${run.period.to.toISOString()} (${run.timeZone})` : `time zone ${run.timeZone}`;
  const results = await dispatcher.dispatch(
    run.tenantId,
    destinations.map((providerId) => ({ providerId })),
    {
      kind: "report",
      dedupeKey: runDedupeKey(run.runId),
      subject: `Report: ${run.title}`,
      text: `${run.title}\n${period}\nAttached: ${run.artifacts.map((a) => a.fileName).join(", ") || "nothing"}\nRun ${run.runId}`,
      payload: {
        event: "report.run",
        runId: run.runId,
        templateId: run.templateId,
        scheduleId: run.scheduleId,
        title: run.title,
        triggeredBy: run.triggeredBy,
        periodFrom: run.period?.from.toISOString() ?? null,
        periodTo: run.period?.to.toISOString() ?? null,
        timeZone: run.timeZone,
        artifacts: run.artifacts.map((a) => {
          const link = links.link(run.tenantId, run.runId, a.format);
          return {
            format: a.format,
            mimeType: a.mimeType,
            fileName: a.fileName,
            bytes: a.bytes.byteLength,
            downloadPath: `/api/v1/reports/runs/${run.runId}/artifacts/${a.format}`,
            downloadUrl: link?.url ?? null,
            downloadUrlExpiresAt: link?.expiresAt.toISOString() ?? null,
            base64: a.bytes.byteLength <= WEBHOOK_INLINE_MAX_BYTES ? Buffer.from(a.bytes).toString("base64") : null,
          };
        }),
      },
      attachments: run.artifacts.map((a) => ({ fileName: a.fileName, contentType: a.mimeType, content: a.bytes })),
    },
  );
  return results.map(storedDelivery);
}

/** A destination's result as a run keeps it. */
export function storedDelivery(r: DeliveryResult): StoredDelivery {
  return {
    providerId: "providerId" in r.destination ? r.destination.providerId : r.destination.target,
    ok: r.accepted,
    providerMessageId: r.messageId ?? null,
    error: r.accepted ? null : (r.error ?? "not accepted"),
  };
}

/** What the deliveries make of a produced run: every destination accepted, some, or none. */
export function deliveredStatus(deliveries: readonly StoredDelivery[]): "completed" | "partially_delivered" | "failed" {
  const ok = deliveries.filter((d) => d.ok).length;
  if (ok === deliveries.length) return "completed";
  return ok === 0 ? "failed" : "partially_delivered";
}

/** The dedupe key of a run's delivery (one message per run), and the run it names. */
export const runDedupeKey = (runId: string) => `report:${runId}`;
export const runOfDedupeKey = (key: string): string | null => (key.startsWith("report:") ? key.slice("report:".length) : null);

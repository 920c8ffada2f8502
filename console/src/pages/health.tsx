import { useEffect, useState } from "preact/hooks";
import { api, withQuery } from "../api";
import { ErrorMessage, formatTime, Loading } from "../components";
import type { PageProps } from "../app";

/** Loads one route; each section of the page fails on its own and shows the API's message. */
function useApi<T>(path: string): { data: T | null; error: unknown } {
  const [state, setState] = useState<{ data: T | null; error: unknown }>({ data: null, error: null });
  useEffect(() => {
    setState({ data: null, error: null });
    api<T>("GET", path)
      .then((data) => setState({ data, error: null }))
      .catch((error) => setState({ data: null, error }));
  }, [path]);
  return state;
}

export function Health(_: PageProps) {
  const [status, setStatus] = useState("open");
  const alerts = useApi<any>(withQuery("/api/v1/system-health", { status, limit: 50 }));
  const rules = useApi<any>("/api/v1/alerts");
  const runs = useApi<any>(withQuery("/api/v1/reports/runs", { limit: 20 }));
  const templates = useApi<any>("/api/v1/reports/templates");
  const templateName = (id: string) => templates.data?.data?.find((t: any) => t.id === id)?.name ?? id;
  return (
    <section aria-labelledby="health-title">
      <h1 id="health-title">Health</h1>

      <h2>System-health alerts</h2>
      <div class="toolbar">
        <label for="health-status">Show</label>
        <select id="health-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="open">open alerts</option>
          <option value="resolved">resolved alerts</option>
          <option value="all">all alerts</option>
        </select>
      </div>
      <ErrorMessage error={alerts.error} />
      {!alerts.data && !alerts.error && <Loading />}
      {alerts.data && (alerts.data.alerts.length === 0 ? <p class="muted">No {status === "all" ? "" : status} alerts.</p> : (
        <table>
          <caption class="visually-hidden">System-health alerts</caption>
          <thead>
            <tr>
              <th scope="col">Severity</th>
              <th scope="col">Condition</th>
              <th scope="col">Message</th>
              <th scope="col">Status</th>
              <th scope="col">Raised</th>
              <th scope="col">Last seen or resolved</th>
            </tr>
          </thead>
          <tbody>
            {alerts.data.alerts.map((a: any) => (
              <tr key={a.id}>
                <td>
                  <span class={`severity severity-${a.severity}`}>{a.severity}</span>
                </td>
                <td class="mono">{a.key}</td>
                <td>{a.message}</td>
                <td>{a.status}</td>
                <td>{formatTime(a.raisedAt)}</td>
                <td>{formatTime(a.resolvedAt ?? a.updatedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}

      <h2>Alert rules</h2>
      <ErrorMessage error={rules.error} />
      {!rules.data && !rules.error && <Loading />}
      {rules.data && (rules.data.length === 0 ? <p class="muted">No alert rules.</p> : (
        <table>
          <caption class="visually-hidden">Alert rules</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Condition</th>
              <th scope="col">Enabled</th>
              <th scope="col">Status</th>
              <th scope="col">Last fired</th>
            </tr>
          </thead>
          <tbody>
            {rules.data.map((r: any) => (
              <tr key={r.id}>
                <th scope="row">{r.name}</th>
                <td class="mono">
                  {r.metric} {r.operator} {r.threshold} over {r.windowMinutes} min
                </td>
                <td>{r.enabled ? "yes" : "no"}</td>
                <td>{r.status}</td>
                <td>{formatTime(r.lastFiredAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}

      <h2>Recent report runs</h2>
      <ErrorMessage error={runs.error} />
      {!runs.data && !runs.error && <Loading />}
      {runs.data && (runs.data.data.length === 0 ? <p class="muted">No report runs yet.</p> : (
        <table>
          <caption class="visually-hidden">Recent report runs</caption>
          <thead>
            <tr>
              <th scope="col">Started</th>
              <th scope="col">Template</th>
              <th scope="col">Status</th>
              <th scope="col">Triggered by</th>
              <th scope="col">Duration</th>
              <th scope="col">Formats</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {runs.data.data.map((r: any) => (
              <tr key={r.id}>
                <td>{formatTime(r.startedAt)}</td>
                <td>{templateName(r.templateId)}</td>
                <td>{r.status}</td>
                <td>{r.triggeredBy}</td>
                <td>{r.durationMs === undefined || r.durationMs === null ? "—" : `${r.durationMs} ms`}</td>
                <td>{(r.artifacts ?? []).map((a: any) => a.format).join(", ") || "—"}</td>
                <td>{r.error ?? "—"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ))}
    </section>
  );
}

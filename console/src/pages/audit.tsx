import { useEffect, useState } from "preact/hooks";
import { api, withQuery } from "../api";
import { ErrorMessage, formatTime, Loading } from "../components";
import { navigate, useRoute } from "../router";
import type { PageProps } from "../app";

const PAGE_SIZE = 25;
const BOOKKEEPING = new Set(["version", "updatedAt", "createdAt"]);

/** What an entry changed: the writer's own `changes`, else the fields that differ between before and after. */
function changedFields(entry: any): string[] {
  const recorded = Object.keys(entry.changes ?? {});
  if (recorded.length > 0 || !entry.before || !entry.after) return recorded;
  const keys = new Set([...Object.keys(entry.before), ...Object.keys(entry.after)]);
  return [...keys].filter((k) => !BOOKKEEPING.has(k) && JSON.stringify(entry.before[k]) !== JSON.stringify(entry.after[k]));
}

/** The audit log (admin), filtered by entity type, with the hash chain's verification. */
export function Audit(_: PageProps) {
  const route = useRoute();
  const entityType = route.query.get("entityType") ?? "";
  const page = Number(route.query.get("page") ?? 1) || 1;
  const [draft, setDraft] = useState(entityType);
  const [log, setLog] = useState<any>(null);
  const [error, setError] = useState<unknown>(null);
  const [verification, setVerification] = useState<any>(null);
  const [verifyError, setVerifyError] = useState<unknown>(null);

  useEffect(() => {
    setLog(null);
    setError(null);
    api("GET", withQuery("/api/v1/audit-logs", { entityType, page, limit: PAGE_SIZE })).then(setLog).catch(setError);
  }, [entityType, page]);

  const verify = () => {
    setVerification(null);
    setVerifyError(null);
    api("GET", "/api/v1/audit-logs/verify").then(setVerification).catch(setVerifyError);
  };
  useEffect(verify, []);

  const go = (q: Record<string, string | number>) => navigate(withQuery("/audit", { entityType, page, ...q }));
  const pages = log ? Math.max(1, Math.ceil(log.total / PAGE_SIZE)) : 1;
  return (
    <section aria-labelledby="audit-title">
      <h1 id="audit-title">Audit log</h1>
      <div class="card" aria-live="polite">
        <h2>Chain verification</h2>
        <ErrorMessage error={verifyError} />
        {!verification && !verifyError && <Loading />}
        {verification && (
          <p class={verification.intact ? "ok" : "error"} data-testid="chain">
            {verification.intact
              ? `Intact: all ${verification.verified} of ${verification.total} entries check out.`
              : `Broken at entry ${verification.brokenAtId} (${verification.brokenReason === "hash_mismatch" ? "an entry was altered" : "the chain link does not match"}); ${verification.verified} entries verified before it.`}
          </p>
        )}
        <button type="button" onClick={verify}>
          Verify again
        </button>
      </div>
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          go({ entityType: draft.trim(), page: 1 });
        }}
      >
        <label for="audit-entity">Entity type</label>
        <input id="audit-entity" value={draft} onInput={(e) => setDraft(e.currentTarget.value)} placeholder="any (e.g. offer)" />
        <button type="submit">Filter</button>
      </form>
      <ErrorMessage error={error} />
      {!log && !error && <Loading />}
      {log && (
        <>
          <p class="muted">
            {log.total} entries; page {page} of {pages}.
          </p>
          <table>
            <caption class="visually-hidden">Audit entries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Entity</th>
                <th scope="col">Version</th>
                <th scope="col">Changed</th>
              </tr>
            </thead>
            <tbody>
              {log.logs.map((l: any) => (
                <tr key={l.id}>
                  <td>{formatTime(l.timestamp)}</td>
                  <td>{l.userName || "—"}</td>
                  <td>{l.action}</td>
                  <td>
                    {l.entityType} {l.entityName ?? l.entityId}
                  </td>
                  <td>{l.entityVersion ?? "—"}</td>
                  <td>{changedFields(l).join(", ") || "—"}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <div class="pager">
            <button type="button" disabled={page <= 1} onClick={() => go({ page: page - 1 })}>
              Newer
            </button>
            <button type="button" disabled={page >= pages} onClick={() => go({ page: page + 1 })}>
              Older
            </button>
          </div>
        </>
      )}
    </section>
  );
}

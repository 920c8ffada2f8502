import { useEffect, useState } from "preact/hooks";
import { api, withQuery } from "../api";
import { ErrorMessage, formatNumber, formatTime, Link, Loading, SignedBarChart } from "../components";
import { navigate, useRoute } from "../router";
import { rejectionStage, STAGES, type StageId } from "../words";
import type { PageProps } from "../app";

const PAGE_SIZE = 20;

/** The decision explorer: a customer's recent decisions, newest first, and one decision's trace. */
export function Decisions(_: PageProps) {
  const route = useRoute();
  const id = route.path.startsWith("/decisions/") ? decodeURIComponent(route.path.slice("/decisions/".length)) : "";
  return id ? <DecisionTrace id={id} /> : <DecisionList />;
}

/** An instant as a `datetime-local` value in the browser's zone, to the minute ("" for none). */
function localInput(iso: string): string {
  const at = new Date(iso);
  if (!iso || Number.isNaN(at.getTime())) return "";
  return new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/**
 * A `datetime-local` value (the browser's zone, to the minute) as the ISO instant the API takes ("" for
 * none); *To* means the end of its minute, so that "to 12:30" keeps a decision made at 12:30:40.
 */
const isoInstant = (local: string, endOfMinute = false) => (local ? new Date(new Date(local).getTime() + (endOfMinute ? 59_999 : 0)).toISOString() : "");

function DecisionList() {
  const route = useRoute();
  const customerId = route.query.get("customerId") ?? "";
  const since = route.query.get("since") ?? "";
  const until = route.query.get("until") ?? "";
  const offset = Number(route.query.get("offset") ?? 0) || 0;
  const [draft, setDraft] = useState({ customerId, from: localInput(since), to: localInput(until) });
  const [result, setResult] = useState<any>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    setResult(null);
    setError(null);
    // A slower answer for an older window must not replace the newer one.
    let current = true;
    api("GET", withQuery("/api/v1/decision-traces", { customerId, since, until, limit: PAGE_SIZE, offset }))
      .then((r) => current && setResult(r))
      .catch((err) => current && setError(err));
    return () => {
      current = false;
    };
  }, [customerId, since, until, offset]);

  const go = (q: Record<string, string | number>) => navigate(withQuery("/decisions", { customerId, since, until, offset, ...q }));
  const total = result?.pagination?.total ?? 0;
  return (
    <section aria-labelledby="decisions-title">
      <h1 id="decisions-title">Decision explorer</h1>
      <form
        class="toolbar"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          go({ customerId: draft.customerId.trim(), since: isoInstant(draft.from), until: isoInstant(draft.to, true), offset: 0 });
        }}
      >
        <label for="customer-id">Customer id</label>
        <input id="customer-id" value={draft.customerId} onInput={(e) => setDraft({ ...draft, customerId: e.currentTarget.value })} placeholder="all customers" />
        <label for="decided-from">From</label>
        <input id="decided-from" type="datetime-local" value={draft.from} onInput={(e) => setDraft({ ...draft, from: e.currentTarget.value })} />
        <label for="decided-to">To</label>
        <input id="decided-to" type="datetime-local" value={draft.to} onInput={(e) => setDraft({ ...draft, to: e.currentTarget.value })} />
        <button type="submit">Find decisions</button>
      </form>
      <ErrorMessage error={error} />
      {!result && !error && <Loading />}
      {result && (
        <>
          <p class="muted">
            {total === 0 ? "No decisions found." : `Decisions ${offset + 1}–${offset + result.data.length} of ${total}, newest first.`}
          </p>
          {result.data.length > 0 && (
            <table>
              <caption class="visually-hidden">Recent decisions</caption>
              <thead>
                <tr>
                  <th scope="col">Decided at</th>
                  <th scope="col">Customer</th>
                  <th scope="col">Recommendation</th>
                  <th scope="col">Kept</th>
                  <th scope="col">Dropped</th>
                  <th scope="col">Scoring</th>
                </tr>
              </thead>
              <tbody>
                {result.data.map((d: any) => (
                  <tr key={d.id}>
                    <td>
                      <Link to={`/decisions/${encodeURIComponent(d.id)}`}>{formatTime(d.createdAt)}</Link>
                    </td>
                    <td>{d.customerId}</td>
                    <td class="mono">{d.recommendationId}</td>
                    <td>{d.selectedCount}</td>
                    <td>{d.rejectedCount}</td>
                    <td>{d.degradedScoring ? "degraded" : "normal"}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div class="pager">
            <button type="button" disabled={offset === 0} onClick={() => go({ offset: Math.max(0, offset - PAGE_SIZE) })}>
              Newer
            </button>
            <button type="button" disabled={offset + PAGE_SIZE >= total} onClick={() => go({ offset: offset + PAGE_SIZE })}>
              Older
            </button>
          </div>
        </>
      )}
    </section>
  );
}

interface Candidate {
  offerId: string;
  name: string;
  score?: any;
  selected?: any;
  rejected?: any;
}

/** Every offer the decision considered, with where it ended: kept (rank, placement) or dropped (stage, why). */
function candidatesOf(trace: any): Candidate[] {
  const byId = new Map<string, Candidate>();
  const get = (offerId: string, name?: string) => {
    let c = byId.get(offerId);
    if (!c) byId.set(offerId, (c = { offerId, name: name || offerId }));
    else if (name && c.name === offerId) c.name = name;
    return c;
  };
  for (const q of trace.qualificationResults ?? []) get(q.offerId);
  for (const s of trace.scoringResults ?? []) get(s.offerId, s.offerName).score = s;
  for (const o of trace.selectedOffers ?? []) get(o.offerId, o.offerName ?? o.name).selected = o;
  for (const r of trace.rejectedOffers ?? []) get(r.offerId, r.offerName).rejected = r;
  return [...byId.values()].sort((a, b) => (a.selected ? a.selected.rank ?? 0 : 1e9) - (b.selected ? b.selected.rank ?? 0 : 1e9));
}

function DecisionTrace({ id }: { id: string }) {
  const [trace, setTrace] = useState<any>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api("GET", `/api/v1/decision-traces/${encodeURIComponent(id)}`).then(setTrace).catch(setError);
  }, [id]);

  if (error) {
    return (
      <section>
        <p>
          <Link to="/decisions">← All decisions</Link>
        </p>
        <ErrorMessage error={error} />
      </section>
    );
  }
  if (!trace) return <Loading />;
  const candidates = candidatesOf(trace);
  const names = new Map(candidates.map((c) => [c.offerId, c.name]));
  const nameOf = (offerId: string) => names.get(offerId) ?? offerId;
  const droppedAt = (stage: StageId) => candidates.filter((c) => c.rejected && rejectionStage(c.rejected.stage).stage === stage);

  return (
    <section aria-labelledby="trace-title">
      <p>
        <Link to={`/decisions?customerId=${encodeURIComponent(trace.customerId)}`}>← Decisions of {trace.customerId}</Link>
      </p>
      <h1 id="trace-title">Decision for {trace.customerId}</h1>
      <dl class="facts">
        <dt>Decided at</dt>
        <dd>{formatTime(trace.createdAt)}</dd>
        <dt>Recommendation</dt>
        <dd class="mono">{trace.recommendationId}</dd>
        <dt>Experiment variant</dt>
        <dd data-testid="experiment">{trace.experiment ? `${trace.experiment.key ?? trace.experiment.experimentId}: ${trace.experiment.variant}` : "none"}</dd>
        <dt>Replay hash (inputs)</dt>
        <dd class="mono" data-testid="replay-hash">
          {trace.inputsHash}
        </dd>
        <dt>Policy version hash</dt>
        <dd class="mono">{trace.policyVersionHash}</dd>
        <dt>Scoring</dt>
        <dd>{trace.degradedScoring ? "degraded: at least one score fell back to 0.5" : "normal"}</dd>
      </dl>

      <h2>Candidates</h2>
      <table data-testid="candidates">
        <caption class="visually-hidden">Every offer the decision considered and where it ended</caption>
        <thead>
          <tr>
            <th scope="col">Offer</th>
            <th scope="col">Outcome</th>
            <th scope="col">Stage</th>
            <th scope="col">Why</th>
            <th scope="col">Score</th>
            <th scope="col">Model</th>
          </tr>
        </thead>
        <tbody>
          {candidates.map((c) => {
            const stage = c.rejected ? rejectionStage(c.rejected.stage) : undefined;
            return (
              <tr key={c.offerId} data-offer={c.name} class={c.rejected ? "dropped" : c.selected ? "kept" : ""}>
                <th scope="row">{c.name}</th>
                <td>{c.selected ? `kept, rank ${c.selected.rank ?? "—"}` : c.rejected ? "dropped" : "considered"}</td>
                <td>{stage ? STAGES.find((s) => s.id === stage.stage)!.title : c.selected ? "4. Ranking" : "—"}</td>
                <td>
                  {c.rejected ? (
                    <>
                      <strong>{stage!.words}</strong>: {c.rejected.reason}
                    </>
                  ) : c.selected ? (
                    c.selected.placementId ? `shown in placement ${c.selected.placementId}` : "shown"
                  ) : (
                    "—"
                  )}
                </td>
                <td>{c.score ? formatNumber(c.score.score) : "—"}</td>
                <td>{c.score ? modelName(c.score) : "—"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>

      {STAGES.map((stage) => (
        <section key={stage.id} class="stage" aria-labelledby={`stage-${stage.id}`}>
          <h2 id={`stage-${stage.id}`}>{stage.title}</h2>
          <p class="muted">{stage.about}</p>
          {stage.id === "qualification" && (
            <CheckTable
              rows={(trace.qualificationResults ?? []).map((q: any) => ({ offer: nameOf(q.offerId), check: q.ruleId, ok: q.passed, reason: q.reason }))}
              caption="Qualification checks"
            />
          )}
          {stage.id === "contact" && (
            <CheckTable
              rows={(trace.contactPolicyResults ?? []).map((q: any) => ({ offer: nameOf(q.offerId), check: q.policyId, ok: !q.blocked, reason: q.reason }))}
              caption="Contact policy checks"
            />
          )}
          {stage.id === "scoring" && <ScoreTable rows={trace.scoringResults ?? []} />}
          {stage.id === "ranking" && <Placements trace={trace} nameOf={nameOf} />}
          {droppedAt(stage.id).length > 0 && (
            <ul class="dropped-list" aria-label={`Dropped at ${stage.title}`}>
              {droppedAt(stage.id).map((c) => (
                <li key={c.offerId}>
                  <strong>{c.name}</strong> dropped: {rejectionStage(c.rejected.stage).words} ({c.rejected.reason})
                </li>
              ))}
            </ul>
          )}
        </section>
      ))}

      <Explanations traceId={trace.id} />
    </section>
  );
}

function modelName(score: any): string {
  const model = score.modelKey ?? score.modelId ?? "";
  return model ? `${model}${score.modelType ? ` (${score.modelType})` : ""}` : score.propensitySource ?? "—";
}

function CheckTable(props: { caption: string; rows: Array<{ offer: string; check: string; ok: boolean; reason: string }> }) {
  if (props.rows.length === 0) return <p class="muted">No checks ran at this stage.</p>;
  return (
    <table>
      <caption class="visually-hidden">{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">Offer</th>
          <th scope="col">Check</th>
          <th scope="col">Result</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        {props.rows.map((r, i) => (
          <tr key={i}>
            <td>{r.offer}</td>
            <td class="mono">{r.check}</td>
            <td>{r.ok ? "passed" : "failed"}</td>
            <td>{r.reason || "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function ScoreTable({ rows }: { rows: any[] }) {
  if (rows.length === 0) return <p class="muted">No offer reached scoring.</p>;
  return (
    <table>
      <caption class="visually-hidden">Scores, best first</caption>
      <thead>
        <tr>
          <th scope="col">Offer</th>
          <th scope="col">Score</th>
          <th scope="col">Model</th>
          <th scope="col">Source</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((s) => (
          <tr key={s.offerId}>
            <td>{s.offerName ?? s.offerId}</td>
            <td>{formatNumber(s.score)}</td>
            <td>{modelName(s)}</td>
            <td>{s.propensitySource ?? "—"}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Placements({ trace, nameOf }: { trace: any; nameOf: (id: string) => string }) {
  const weights = Object.entries(trace.rankingWeights ?? {});
  const selected: any[] = trace.selectedOffers ?? [];
  return (
    <>
      {weights.length > 0 && (
        <p>
          Ranking weights: {weights.map(([k, v]) => `${k} ${formatNumber(v as number)}`).join(", ")}
        </p>
      )}
      {selected.length === 0 ? (
        <p class="muted">No offer was returned.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Ranking and placements</caption>
          <thead>
            <tr>
              <th scope="col">Rank</th>
              <th scope="col">Offer</th>
              <th scope="col">Placement</th>
              <th scope="col">Creative</th>
              <th scope="col">Rank score</th>
            </tr>
          </thead>
          <tbody>
            {selected.map((o) => (
              <tr key={o.offerId}>
                <td>{o.rank ?? "—"}</td>
                <td>{o.offerName ?? nameOf(o.offerId)}</td>
                <td>{o.placementId ?? "—"}</td>
                <td class="mono">{o.creativeId ?? "—"}</td>
                <td>{formatNumber(o.rankScore ?? o.score)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

/** TreeSHAP and the written narrative: both are tenant opt-ins; when off, the API says so and we show it. */
function Explanations({ traceId }: { traceId: string }) {
  const [shap, setShap] = useState<any>(null);
  const [narrative, setNarrative] = useState<any>(null);
  const [mode, setMode] = useState("marketer");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (what: "shap" | "narrative") => {
    setBusy(true);
    setError(null);
    try {
      if (what === "shap") setShap(await api("POST", `/api/v1/decisions/${encodeURIComponent(traceId)}/shap`, {}));
      else setNarrative(await api("POST", `/api/v1/decisions/${encodeURIComponent(traceId)}/narrative`, { mode }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="stage" aria-labelledby="explain-title">
      <h2 id="explain-title">Explanations</h2>
      <div class="toolbar">
        <button type="button" disabled={busy} onClick={() => run("shap")}>
          Show TreeSHAP contributions
        </button>
        <label for="narrative-mode">Narrative for</label>
        <select id="narrative-mode" value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
          <option value="marketer">a marketer</option>
          <option value="customer">the customer</option>
          <option value="regulator">a regulator</option>
        </select>
        <button type="button" disabled={busy} onClick={() => run("narrative")}>
          Write narrative
        </button>
      </div>
      <ErrorMessage error={error} />
      {shap &&
        shap.candidates.map((c: any) => (
          <SignedBarChart
            key={c.offerId}
            title={`${c.offerName}: score ${formatNumber(c.score)}, model ${shap.modelKey}, base value ${formatNumber(shap.baseValue)}`}
            rows={c.contributions.map((f: any) => ({ label: `${f.feature} = ${f.value ?? "missing"}`, value: f.contribution }))}
          />
        ))}
      {narrative && (
        <figure class="narrative">
          <blockquote>{narrative.narrative}</blockquote>
          <figcaption>
            {narrative.writer.label} ({narrative.writer.kind}, {narrative.writer.model})
            {narrative.writer.fallbackReason ? `; ${narrative.writer.fallbackReason}` : ""}
            {narrative.cached ? ", from the cache" : ""}
          </figcaption>
        </figure>
      )}
    </section>
  );
}

import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { ErrorMessage, formatNumber, formatP, formatTime, IntervalChart, Link, Loading, percent } from "../components";
import { useRoute } from "../router";
import type { PageProps } from "../app";

const VARIANT_NAMES: Record<string, string> = { __holdout__: "Holdout", __champion__: "Champion" };
const variantName = (v: string) => VARIANT_NAMES[v] ?? `Challenger ${v}`;

export function Experiments(_: PageProps) {
  const route = useRoute();
  const id = route.path.startsWith("/experiments/") ? decodeURIComponent(route.path.slice("/experiments/".length)) : "";
  return id ? <ExperimentResults id={id} /> : <ExperimentList />;
}

function ExperimentList() {
  const [list, setList] = useState<any[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api("GET", "/api/v1/experiments")
      .then((r) => setList(Array.isArray(r) ? r : r.data ?? []))
      .catch(setError);
  }, []);
  return (
    <section aria-labelledby="experiments-title">
      <h1 id="experiments-title">Experiments</h1>
      <ErrorMessage error={error} />
      {!list && !error && <Loading />}
      {list && list.length === 0 && <p class="muted">No experiments yet.</p>}
      {list && list.length > 0 && (
        <table>
          <caption class="visually-hidden">Experiments</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Key</th>
              <th scope="col">Status</th>
              <th scope="col">Holdout</th>
              <th scope="col">Challengers</th>
              <th scope="col">Started</th>
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <tr key={e.id}>
                <th scope="row">
                  <Link to={`/experiments/${encodeURIComponent(e.id)}`}>{e.name}</Link>
                </th>
                <td class="mono">{e.key}</td>
                <td>{e.status}</td>
                <td>{e.holdoutPercent}%</td>
                <td>{(e.challengers ?? []).length}</td>
                <td>{formatTime(e.startedAt)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function ExperimentResults({ id }: { id: string }) {
  const [experiment, setExperiment] = useState<any>(null);
  const [results, setResults] = useState<any>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    Promise.all([api("GET", `/api/v1/experiments/${encodeURIComponent(id)}`), api("GET", `/api/v1/experiments/${encodeURIComponent(id)}/results`)])
      .then(([e, r]) => {
        setExperiment(e);
        setResults(r);
      })
      .catch(setError);
  }, [id]);
  const back = (
    <p>
      <Link to="/experiments">← All experiments</Link>
    </p>
  );
  if (error) return <section>{back}<ErrorMessage error={error} /></section>;
  if (!results) return <Loading />;
  const variants: any[] = results.variants ?? [];
  return (
    <section aria-labelledby="experiment-title">
      {back}
      <h1 id="experiment-title">{experiment.name}</h1>
      <p class="muted">
        Key <span class="mono">{experiment.key}</span>, {experiment.status}, holdout {experiment.holdoutPercent}%, champion share{" "}
        {experiment.trafficSplit?.championPct}% of the rest
      </p>
      {results.srm?.mismatch && (
        <div class="banner danger" role="alert" data-testid="srm-banner">
          <strong>Sample ratio mismatch.</strong> The variants' sample sizes do not match the configured split (chi-square{" "}
          {formatNumber(results.srm.chiSquare, 2)}, p {formatP(results.srm.pValue).startsWith("<") ? "" : "= "}{formatP(results.srm.pValue)}). Assignment or logging may be broken, or the split
          was changed while customers kept their variants. Do not trust the uplifts below until this is explained.
        </div>
      )}
      <IntervalChart
        title={`Conversion rate per variant with ${percent(results.parameters?.confidenceLevel, 0)} Wilson intervals`}
        rows={variants.map((v) => ({ label: variantName(v.variant), value: v.rate, lower: v.wilsonLower, upper: v.wilsonUpper }))}
      />
      <table>
        <caption class="visually-hidden">Results per variant</caption>
        <thead>
          <tr>
            <th scope="col">Variant</th>
            <th scope="col">Samples</th>
            <th scope="col">Conversions</th>
            <th scope="col">Rate</th>
            <th scope="col">Wilson interval</th>
            <th scope="col">Uplift vs holdout</th>
            <th scope="col">p-value</th>
            <th scope="col">Significant</th>
          </tr>
        </thead>
        <tbody>
          {variants.map((v) => (
            <tr key={v.variant}>
              <th scope="row">{variantName(v.variant)}</th>
              <td>{v.samples}</td>
              <td>{v.conversions}</td>
              <td>{percent(v.rate, 2)}</td>
              <td>
                {percent(v.wilsonLower, 2)} – {percent(v.wilsonUpper, 2)}
              </td>
              <td>
                {v.absoluteUplift === undefined ? "—" : `${percent(v.absoluteUplift, 2)} (${v.relativeUplift === undefined ? "—" : percent(v.relativeUplift, 1)} relative)`}
              </td>
              <td>{formatP(v.pValue)}</td>
              <td>{v.significant === undefined ? "—" : v.significant ? "yes" : "no"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">
        Sample ratio check: chi-square {formatNumber(results.srm?.chiSquare, 3)}, p {formatP(results.srm?.pValue).startsWith("<") ? "" : "= "}{formatP(results.srm?.pValue)}. Samples needed per
        variant to detect a {percent(results.parameters?.minimumDetectableEffect, 0)} lift: {results.requiredSampleSize ?? "—"}.
      </p>
    </section>
  );
}

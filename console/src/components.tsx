import type { ComponentChildren } from "preact";
import { ApiError } from "./api";
import { BASE, onLink } from "./router";

export function Link(props: { to: string; children: ComponentChildren; class?: string; "aria-current"?: "page" | undefined }) {
  return (
    <a href={BASE + props.to} class={props.class} aria-current={props["aria-current"]} onClick={(e) => onLink(e as MouseEvent, props.to)}>
      {props.children}
    </a>
  );
}

/** The API's own message (never a stack trace); its reason code stays visible for support. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof ApiError ? error.message : "Something went wrong in the console. Reload the page and try again.";
  const reason = error instanceof ApiError && error.reason ? error.reason : undefined;
  return (
    <div class="error" role="alert">
      {message}
      {reason && <span class="reason"> ({reason})</span>}
    </div>
  );
}

export function Loading() {
  return <p class="muted" role="status">Loading…</p>;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
}

export function formatNumber(n: number | null | undefined, digits = 4): string {
  return typeof n === "number" && Number.isFinite(n) ? n.toFixed(digits).replace(/\.?0+$/, "") || "0" : "—";
}

/** A p-value as people read it: tiny ones as "< 0.000001" rather than a rounded 0. */
export function formatP(p: number | null | undefined): string {
  return typeof p === "number" && p > 0 && p < 1e-6 ? "< 0.000001" : formatNumber(p, 6);
}

export function percent(n: number | null | undefined, digits = 1): string {
  return typeof n === "number" && Number.isFinite(n) ? `${(n * 100).toFixed(digits)}%` : "—";
}

/** Horizontal bars around zero, for signed contributions (TreeSHAP values). */
export function SignedBarChart(props: { title: string; rows: Array<{ label: string; value: number; note?: string }> }) {
  const max = Math.max(1e-12, ...props.rows.map((r) => Math.abs(r.value)));
  const width = 640;
  const labelWidth = 200;
  const half = (width - labelWidth - 70) / 2;
  const rowHeight = 24;
  const height = props.rows.length * rowHeight + 10;
  const centre = labelWidth + half;
  return (
    <figure class="chart">
      <svg role="img" aria-label={props.title} viewBox={`0 0 ${width} ${height}`} width="100%">
        <title>{props.title}</title>
        <line x1={centre} x2={centre} y1={0} y2={height} class="axis" />
        {props.rows.map((r, i) => {
          const w = (Math.abs(r.value) / max) * half;
          const y = i * rowHeight + 5;
          return (
            <g key={r.label}>
              <text x={labelWidth - 8} y={y + 15} text-anchor="end" class="label">
                {r.label}
              </text>
              <rect x={r.value >= 0 ? centre : centre - w} y={y + 3} width={Math.max(w, 1)} height={rowHeight - 8} class={r.value >= 0 ? "bar-pos" : "bar-neg"} />
              <text x={r.value >= 0 ? centre + w + 4 : centre - w - 4} y={y + 15} text-anchor={r.value >= 0 ? "start" : "end"} class="value">
                {formatNumber(r.value, 3)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption>{props.title}</figcaption>
    </figure>
  );
}

/** Points with interval whiskers on a 0-100% axis (conversion rates with Wilson intervals). */
export function IntervalChart(props: { title: string; rows: Array<{ label: string; value: number; lower: number; upper: number }> }) {
  const width = 640;
  const labelWidth = 160;
  const plot = width - labelWidth - 30;
  const upperBound = Math.min(1, Math.max(0.05, ...props.rows.map((r) => r.upper)) * 1.1);
  const x = (v: number) => labelWidth + (Math.max(0, Math.min(upperBound, v)) / upperBound) * plot;
  const rowHeight = 34;
  const height = props.rows.length * rowHeight + 30;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => f * upperBound);
  return (
    <figure class="chart">
      <svg role="img" aria-label={props.title} viewBox={`0 0 ${width} ${height}`} width="100%">
        <title>{props.title}</title>
        {ticks.map((t) => (
          <g key={t}>
            <line x1={x(t)} x2={x(t)} y1={0} y2={height - 20} class="grid" />
            <text x={x(t)} y={height - 5} text-anchor="middle" class="value">
              {percent(t, 1)}
            </text>
          </g>
        ))}
        {props.rows.map((r, i) => {
          const y = i * rowHeight + 18;
          return (
            <g key={r.label}>
              <text x={labelWidth - 8} y={y + 5} text-anchor="end" class="label">
                {r.label}
              </text>
              <line x1={x(r.lower)} x2={x(r.upper)} y1={y} y2={y} class="whisker" />
              <line x1={x(r.lower)} x2={x(r.lower)} y1={y - 6} y2={y + 6} class="whisker" />
              <line x1={x(r.upper)} x2={x(r.upper)} y1={y - 6} y2={y + 6} class="whisker" />
              <circle cx={x(r.value)} cy={y} r={5} class="point" />
            </g>
          );
        })}
      </svg>
      <figcaption>{props.title}</figcaption>
    </figure>
  );
}

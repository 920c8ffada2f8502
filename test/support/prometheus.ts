/**
 * The value of one sample in a Prometheus text exposition: the line whose metric name is `name`
 * and whose labels are exactly `labels`; null when there is none.
 */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | null {
  const want = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(",");
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = [...(m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, k, v]) => [k, v] as const)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
      .join(",");
    if (have === want) return Number(m[3]);
  }
  return null;
}

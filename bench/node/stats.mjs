// Small numeric and table helpers shared by the bridge benchmark's parent and children.

/** A run during which other processes used more than this share of the CPUs (percent) is
 * flagged, and its round is run again (bridge_bench.mjs --retry-busy). */
export const BUSY_CPU_PCT = 5;

/** Median of the finite numbers in `xs`; NaN when there are none. */
export function median(xs) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Nearest-rank percentile (p in [0, 100]) of the finite numbers in `xs`; NaN when empty. */
export function percentile(xs, p) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * v.length);
  return v[Math.min(v.length - 1, Math.max(0, rank - 1))];
}

/** Per-round ratios a[i] / b[i] for rounds where both sides have a value. */
export function pairedRatios(a, b) {
  const out = [];
  for (let i = 0; i < Math.min(a.length, b.length); ++i) {
    if (Number.isFinite(a[i]) && Number.isFinite(b[i]) && b[i] !== 0) out.push(a[i] / b[i]);
  }
  return out;
}

/** Formats a number for a table cell: `digits` decimals, "-" when not finite. */
export function fmt(x, digits = 2) {
  if (typeof x === "string") return x;
  if (typeof x === "boolean") return x ? "yes" : "no";
  return Number.isFinite(x) ? x.toFixed(digits) : "-";
}

/** Renders rows (arrays of cells) as a Markdown table under `header`. */
export function table(header, rows) {
  const all = [header, ...rows].map((r) => r.map(String));
  const width = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? "").length)));
  const line = (r) => "| " + r.map((cell, c) => cell.padEnd(width[c])).join(" | ") + " |";
  const rule = "|" + width.map((w) => "-".repeat(w + 2)).join("|") + "|";
  return [line(all[0]), rule, ...all.slice(1).map(line)].join("\n");
}

/** Summary of an event-loop-delay histogram in milliseconds (perf_hooks reports ns). */
export function loopDelaySummary(h) {
  return {
    p50Ms: h.percentile(50) / 1e6,
    p99Ms: h.percentile(99) / 1e6,
    maxMs: h.max / 1e6,
    samples: h.count,
  };
}

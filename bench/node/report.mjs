// Turns bridge_bench.mjs's runs into a summary object and Markdown tables.
// Figures are medians over rounds; a ratio is the median of the per-round ratios (the two runs
// of one round ran next to each other, so a ratio cancels most of the machine's drift).
import { BUSY_CPU_PCT, fmt, median, pairedRatios, percentile, table } from "./stats.mjs";

const MiB = 1024 * 1024;
const pick = (runs, key) => runs.map((r) => (typeof key === "function" ? key(r) : r[key]));

/** One compared figure: medians of both sides and the median per-round ratio a/b. */
function compare(aRuns, bRuns, key) {
  const a = pick(aRuns, key);
  const b = pick(bRuns, key);
  const ratios = pairedRatios(a, b);
  return { a: median(a), b: median(b), ratio: median(ratios), ratios };
}

function goalCell(ratio, goal) {
  if (!goal || !Number.isFinite(ratio)) return "";
  const ok = goal.startsWith(">=") ? ratio >= Number(goal.slice(2)) : ratio <= Number(goal.slice(2));
  return `${goal} ${ok ? "met" : "NOT met"}`;
}

function compareRow(label, c, digits, goal = "") {
  return [label, fmt(c.a, digits), fmt(c.b, digits), fmt(c.ratio, 3), goalCell(c.ratio, goal),
    c.ratios.map((x) => x.toFixed(3)).join(" ")];
}

function infoRow(label, a, b) {
  return [label, a, b, "", "", ""];
}

const tokensCell = (runs) =>
  `${median(pick(runs, "nPrompt"))} / ${pick(runs, "nGen").join(",")}`;
/** "yes" when every round's texts match, else where the first difference starts. */
function sameText(aRuns, bRuns) {
  let shortest = Infinity;
  for (let i = 0; i < aRuns.length; ++i) {
    const a = [...aRuns[i].text];
    const b = [...(bRuns[i]?.text ?? "")];
    if (aRuns[i].text === bRuns[i]?.text) continue;
    let n = 0;
    while (n < a.length && n < b.length && a[n] === b[n]) ++n;
    shortest = Math.min(shortest, n);
  }
  return shortest === Infinity ? "yes" : `no: same first ${shortest} chars`;
}

function nativeSection(cli, e4) {
  const s = {
    decodeTps: compare(e4, cli, "decodeTps"),
    ttftMs: compare(e4, cli, "ttftMs"),
    prefillTps: compare(e4, cli, "prefillTps"),
    e2eTps: compare(e4, cli, "e2eTps"),
    sameText: sameText(e4, cli) === "yes",
  };
  const rows = [
    compareRow("decode tok/s (engine clock)", s.decodeTps, 2, ">=0.98"),
    compareRow("TTFT ms (engine clock)", s.ttftMs, 1),
    compareRow("prefill tok/s", s.prefillTps, 1),
    compareRow("whole generation tok/s (bridge: JS clock)", s.e2eTps, 2),
    infoRow("prompt / generated tokens", tokensCell(e4), tokensCell(cli)),
    infoRow("same text as native", sameText(e4, cli), ""),
  ];
  const text = "## 1. Bridge vs native engine (bridge: batchTokens 4)\n\n" +
    table(["figure", "bridge", "native CLI", "bridge/native", "goal", "per round"], rows);
  return { summary: s, text };
}

function batchingFigures(runs) {
  const lat = runs.flatMap((r) => r.latenciesUs);
  return {
    decodeTps: median(pick(runs, "decodeTps")),
    e2eTps: median(pick(runs, "e2eTps")),
    callbacks: median(pick(runs, "callbacks")),
    latencyP50Us: percentile(lat, 50),
    latencyP99Us: percentile(lat, 99),
    latencyMaxUs: Math.max(...lat),
    loopP50Ms: median(pick(runs, (r) => r.loop.p50Ms)),
    loopP99Ms: median(pick(runs, (r) => r.loop.p99Ms)),
    loopMaxMs: Math.max(...pick(runs, (r) => r.loop.maxMs)),
    idleP99Ms: median(pick(runs, (r) => r.idle.p99Ms)),
    idleMaxMs: Math.max(...pick(runs, (r) => r.idle.maxMs)),
  };
}

function batchingSection(e1, e4) {
  const b1 = batchingFigures(e1);
  const b4 = batchingFigures(e4);
  const decode = compare(e4, e1, "decodeTps");
  const row = (label, key, digits) => [label, fmt(b1[key], digits), fmt(b4[key], digits)];
  const rows = [
    [...row("decode tok/s (engine clock)", "decodeTps", 2), fmt(decode.ratio, 3)],
    [...row("whole generation tok/s (JS clock)", "e2eTps", 2), ""],
    [...row("JS callbacks per generation", "callbacks", 0), ""],
    [...row("delivery latency p50 us (all batches)", "latencyP50Us", 0), ""],
    [...row("delivery latency p99 us", "latencyP99Us", 0), ""],
    [...row("delivery latency max us", "latencyMaxUs", 0), ""],
    [...row("loop delay p50 ms, generating", "loopP50Ms", 2), ""],
    [...row("loop delay p99 ms, generating", "loopP99Ms", 2), ""],
    [...row("loop delay max ms, generating", "loopMaxMs", 2), ""],
    [...row("loop delay p99 ms, idle baseline", "idleP99Ms", 2), ""],
    [...row("loop delay max ms, idle baseline", "idleMaxMs", 2), ""],
  ];
  const text = "## 2. Delivery to JS: batchTokens 1 vs 4 (batchMs large)\n\n" +
    table(["figure", "batchTokens 1", "batchTokens 4", "4 vs 1"], rows) +
    "\n\nLoop delay is perf_hooks.monitorEventLoopDelay at 1 ms resolution; its values include" +
    " that 1 ms interval (an idle loop reads ~1.1 ms).";
  return { summary: { b1, b4, decodeRatio4vs1: decode.ratio }, text };
}

function nlcSection(e1, nlc, e4) {
  const s = {
    ttftMs: compare(e1, nlc, "firstTextMs"),
    decodeTps: compare(e1, nlc, "callerDecodeTps"),
    e2eTps: compare(e1, nlc, "e2eTps"),
    loadWallMs: compare(e1, nlc, "loadWallMs"),
    warmupMs: compare(e1, nlc, "warmupMs"),
    peakRssMiB: compare(e1, nlc, (r) => r.peakRssBytes / MiB),
    loopP99Ms: compare(e1, nlc, (r) => r.loop.p99Ms),
    sameText: sameText(e1, nlc) === "yes",
  };
  const rows = [
    compareRow("TTFT ms (call -> first token in JS)", s.ttftMs, 1, "<=1"),
    compareRow("decode tok/s (first -> last token in JS)", s.decodeTps, 2, ">=1"),
    compareRow("whole generation tok/s (JS clock)", s.e2eTps, 2),
    compareRow("load + context ms (JS clock)", s.loadWallMs, 0),
    compareRow("warm-up ms", s.warmupMs, 0),
    compareRow("peak RSS MiB (process)", s.peakRssMiB, 0),
    compareRow("loop delay p99 ms, generating", s.loopP99Ms, 2),
    infoRow("prompt / generated tokens", tokensCell(e1), tokensCell(nlc)),
    infoRow("same text as edgellm", "", sameText(e1, nlc)),
  ];
  if (e4 && e4.length) {
    s.decodeTpsBatch4 = compare(e4, nlc, "decodeTps");
    rows.splice(2, 0, compareRow("decode tok/s, edgellm batchTokens 4 (engine clock)",
      s.decodeTpsBatch4, 2, ">=1"));
  }
  const text = "## 3. edgellm (batchTokens 1) vs node-llama-cpp 3.21.1 (child process each)\n\n" +
    table(["figure", "edgellm", "node-llama-cpp", "edgellm/nlc", "goal", "per round"], rows);
  return { summary: s, text };
}

function warnings(results) {
  const out = [];
  for (const [name, runs] of Object.entries(results)) {
    for (const r of runs) {
      if (r.foreignCpuPct > BUSY_CPU_PCT) {
        out.push(`warning: ${name} round ${r.round + 1} shared the machine: other processes ` +
          `used ${r.foreignCpuPct.toFixed(0)}% of its CPU capacity during the run`);
      }
      if (r.finishReason !== "length") {
        out.push(`warning: ${name} round ${r.round + 1} stopped early (${r.finishReason}, ` +
          `${r.nGen} tokens): its tok/s covers fewer tokens than the other side's`);
      }
    }
  }
  return out;
}

/** Returns { summary, text } for the runs that were made. */
export function report(meta, results) {
  const sections = [];
  const summary = {};
  if (results.cli && results.e4) {
    const s = nativeSection(results.cli, results.e4);
    summary.native = s.summary;
    sections.push(s.text);
  }
  if (results.e1 && results.e4) {
    const s = batchingSection(results.e1, results.e4);
    summary.batching = s.summary;
    sections.push(s.text);
  }
  if (results.e1 && results.nlc) {
    const s = nlcSection(results.e1, results.nlc, results.e4);
    summary.nlc = s.summary;
    sections.push(s.text);
  }
  const head = `# edgellm Node bridge benchmark\n\n${meta.model}, ${meta.threads} threads, ctx ` +
    `${meta.ctx}, batch ${meta.batch}, ${meta.tokens} tokens, ${meta.rounds} rounds, ` +
    `${meta.loadMode}, greedy${meta.ignoreEos ? ", EOS ignored" : ""}; ${meta.cpus}, node ` +
    `${meta.node}; ${meta.wallS.toFixed(0)} s; load average after ` +
    meta.loadAverageAfter.map((x) => x.toFixed(2)).join(" ");
  const foreign = Object.values(results).flat().map((r) => r.foreignCpuPct).filter(Number.isFinite);
  const quiet = foreign.length ? `; other processes used at most ${Math.max(...foreign).toFixed(0)}% ` +
    `of the CPUs during a kept run (median ${median(foreign).toFixed(1)}%)` : "";
  const again = meta.discardedRounds ? `; ${meta.discardedRounds} round(s) run again because ` +
    `other processes were busy` : "";
  const text = [head + quiet + again, ...sections, ...warnings(results)].join("\n\n");
  return { summary, text };
}

#!/usr/bin/env node
// edgellm's Node-API bridge, measured side by side in one run (docs/node-bench.md):
//   1. bridge vs the native engine (the CLI) on the same file, threads, context and tokens;
//   2. delivery of batches to JS with 1 vs 4 tokens per batch (latency, loop delay, callbacks);
//   3. edgellm vs node-llama-cpp@3.21.1 (same llama.cpp release) on TTFT and decode tok/s.
// Every measured generation runs in its own process; rounds rotate the order of the runs so
// drift on a shared machine hits every side alike. Figures are medians, ratios are medians
// of per-round ratios.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

import { report } from "./report.mjs";
import { BUSY_CPU_PCT } from "./stats.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");
const DEFAULT_PROMPT =
  "On-device language models run on phones, tablets and small computers without a network " +
  "connection. Latency, memory and power matter more there than raw quality, so the runtime " +
  "streams text in small batches and keeps the user interface responsive while it generates. " +
  "Summarize the trade-offs.";
const PARTS = ["native", "batching", "nlc"];
const HUGE_BATCH_MS = 600000; // batches close on token count only

const HELP = `Usage: node bench/node/bridge_bench.mjs [options]

Measures edgellm's Node-API bridge against the native engine and against node-llama-cpp,
side by side, in one run. Prints Markdown tables (or one JSON object with --json).

Options:
  -m, --model PATH     GGUF model (default models/qwen2.5-1.5b-Q4_K_M.gguf)
  -t, --threads N      threads for every side (default: physical cores)
  -c, --ctx N          context length for every side (default 2048)
  -b, --batch N        prompt batch size for every side (default 512)
  -n, --tokens N       tokens generated per run (default 128)
  -r, --rounds N       rounds; each runs every side once, order rotated (default 3)
  -p, --prompt TEXT    prompt (default: a fixed 55-token English paragraph)
      --prompt-file F  read the prompt from a file
      --load-mode M    mmap|read|auto for every side (default mmap, node-llama-cpp's default;
                       auto = edgellm's rule, mmap below 500 MiB, resolved here for both)
      --parts LIST     comma list of ${PARTS.join(",")} (default all)
      --no-ignore-eos  stop at end-of-generation tokens (default: generate exactly N tokens
                       on every side, since random-weight models may emit EOS early)
      --retry-busy N   run a round again (up to N times) when other processes took more
                       than ${BUSY_CPU_PCT}% of the CPUs during one of its runs (default 1)
      --idle-ms N      event-loop-delay baseline taken before each generation (default 500)
      --cli PATH       edgellm CLI (default build/bin/edgellm)
      --addon PATH     edgellm's index.js (default bindings/node/index.js)
      --json           print one JSON object (config, every run, summary)
      --from-json F    print the tables of a saved --json output again (runs nothing)
  -h, --help           this text

Runs per round: cli (native), edgellm with batchTokens 4 and 1 (batchMs ${HUGE_BATCH_MS}),
node-llama-cpp; each in a fresh process that loads and warms up the model, then times one
generation with temperature 0.`;

function parseCli(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      model: { type: "string", short: "m", default: path.join(ROOT, "models/qwen2.5-1.5b-Q4_K_M.gguf") },
      threads: { type: "string", short: "t" },
      ctx: { type: "string", short: "c", default: "2048" },
      batch: { type: "string", short: "b", default: "512" },
      tokens: { type: "string", short: "n", default: "128" },
      rounds: { type: "string", short: "r", default: "3" },
      prompt: { type: "string", short: "p", default: DEFAULT_PROMPT },
      "prompt-file": { type: "string" },
      "load-mode": { type: "string", default: "mmap" },
      parts: { type: "string", default: PARTS.join(",") },
      "no-ignore-eos": { type: "boolean", default: false },
      "idle-ms": { type: "string", default: "500" },
      cli: { type: "string", default: path.join(ROOT, "build/bin/edgellm") },
      addon: { type: "string", default: path.join(ROOT, "bindings/node/index.js") },
      "retry-busy": { type: "string", default: "1" },
      json: { type: "boolean", default: false },
      "from-json": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  return values;
}

function positiveInt(name, s) {
  const v = Number(s);
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${name} must be a positive integer, got "${s}"`);
  return v;
}

/** Distinct (package, core) pairs: what edgellm uses by default and never exceeds. */
function physicalCores() {
  const seen = new Set();
  for (let i = 0; i < os.availableParallelism(); ++i) {
    const dir = `/sys/devices/system/cpu/cpu${i}/topology`;
    try {
      const pkg = fs.readFileSync(`${dir}/physical_package_id`, "utf8").trim();
      const core = fs.readFileSync(`${dir}/core_id`, "utf8").trim();
      seen.add(`${pkg}:${core}`);
    } catch {
      return os.availableParallelism();
    }
  }
  return Math.max(1, seen.size);
}

function resolveLoadMode(mode, model) {
  if (mode === "mmap" || mode === "read") return mode;
  if (mode !== "auto") throw new Error(`--load-mode must be mmap, read or auto, got "${mode}"`);
  return fs.statSync(model).size < 500 * 1024 * 1024 ? "mmap" : "read";
}

/** `file` relative to the repository when inside it, else absolute. */
function shown(file) {
  const rel = path.relative(ROOT, file);
  return rel.startsWith("..") ? file : rel;
}

function mustExist(file, what, hint) {
  if (!fs.existsSync(file)) throw new Error(`${what} not found at ${file}: ${hint}`);
}

/** Spawns `cmd args`, resolves with stdout; rejects with stderr's tail on a non-zero exit. */
function runProcess(cmd, args, { cwd = ROOT } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(out);
      else reject(new Error(`${path.basename(cmd)} ${args[0]} exited ${code}: ${err.slice(-2000)}`));
    });
  });
}

function cliSupports(cli, flag) {
  return runProcess(cli, ["run", "--help"]).then((help) => help.includes(flag));
}

async function runCli(cfg) {
  const args = ["run", "-m", cfg.model, "-p", cfg.prompt, "-n", String(cfg.tokens), "--temp", "0",
    "--threads", String(cfg.threads), "--ctx", String(cfg.ctx), "--batch", String(cfg.batch),
    "--load-mode", cfg.loadMode, "--json", "-q"];
  if (cfg.ignoreEos) args.push("--ignore-eos");
  const j = JSON.parse(await runProcess(cfg.cli, args));
  return {
    lib: "cli", text: j.text, finishReason: j.finish_reason, nPrompt: j.n_prompt, nGen: j.n_gen,
    ttftMs: j.ttft_ms, prefillTps: j.prefill_tps, decodeTps: j.decode_tps,
    // The engine's own span of the whole generation (no caller clock outside the process).
    e2eMs: j.ttft_ms + j.decode_ms, e2eTps: (j.n_gen * 1000) / (j.ttft_ms + j.decode_ms),
    loadMs: j.load_ms, warmupMs: j.warmup_ms, threads: j.n_threads, ctx: j.n_ctx,
    batch: j.n_batch, peakRssBytes: j.peak_rss_bytes,
  };
}

async function runChild(kind, cfg) {
  const out = await runProcess(process.execPath, [path.join(HERE, "runners.mjs"), kind,
    JSON.stringify(cfg)], { cwd: HERE });
  const line = out.split("\n").find((l) => l.startsWith("@@RESULT "));
  if (!line) throw new Error(`runners.mjs ${kind} printed no result: ${out.slice(-1000)}`);
  return JSON.parse(line.slice("@@RESULT ".length));
}

const CLK_TCK = 100; // USER_HZ: the unit of /proc/stat and /proc/self/stat on Linux

/** CPU time, in seconds, of the whole machine (busy), of this process and of its waited-for
 * children: enough to tell how much CPU something else used during a run. */
function cpuSnapshot() {
  const t = performance.now();
  try {
    const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = cpu;
    const stat = fs.readFileSync("/proc/self/stat", "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number); // f[0] is field 3
    return {
      t,
      busy: (user + nice + system + irq + softirq + steal) / CLK_TCK,
      self: (f[11] + f[12]) / CLK_TCK,
      children: (f[13] + f[14]) / CLK_TCK,
    };
  } catch {
    return { t, busy: NaN, self: NaN, children: NaN };
  }
}

/** Percent of the machine's CPU capacity used by other processes between two snapshots. */
function foreignCpuPct(a, b) {
  const wall = (b.t - a.t) / 1000;
  const foreign = b.busy - a.busy - (b.self - a.self) - (b.children - a.children);
  return Math.max(0, (100 * foreign) / (wall * os.availableParallelism()));
}

/** Reads the whole file once so that no run, the first included, pays for disk reads. */
function primePageCache(file) {
  const fd = fs.openSync(file, "r");
  const buf = Buffer.allocUnsafe(16 * 1024 * 1024);
  try {
    while (fs.readSync(fd, buf, 0, buf.length, null) > 0) {}
  } finally {
    fs.closeSync(fd);
  }
}

/** The runs of one round, by name. */
function runsFor(parts) {
  const runs = [];
  if (parts.has("native")) runs.push("cli");
  if (parts.has("native") || parts.has("batching")) runs.push("e4");
  if (parts.has("batching") || parts.has("nlc")) runs.push("e1");
  if (parts.has("nlc")) runs.push("nlc");
  return runs;
}

function runOne(name, cfg) {
  const child = { ...cfg, cli: undefined };
  switch (name) {
    case "cli": return runCli(cfg);
    case "e4": return runChild("edgellm", { ...child, batchTokens: 4, batchMs: HUGE_BATCH_MS });
    case "e1": return runChild("edgellm", { ...child, batchTokens: 1, batchMs: HUGE_BATCH_MS });
    case "nlc": return runChild("nlc", child);
    default: throw new Error(`unknown run ${name}`);
  }
}

/** Fails early, saying what to do, when something a run needs is missing. */
async function checkPrerequisites(cfg, runs) {
  if (runs.includes("cli")) {
    mustExist(cfg.cli, "edgellm CLI", "build it (scripts/setup.sh) or pass --cli");
    if (cfg.ignoreEos && !(await cliSupports(cfg.cli, "--ignore-eos"))) {
      throw new Error(`${cfg.cli} run has no --ignore-eos: rebuild it, or pass --no-ignore-eos`);
    }
  }
  if (runs.some((r) => r[0] === "e")) {
    mustExist(cfg.addon, "edgellm's index.js", "pass --addon");
    if (!process.env.EDGELLM_NODE_ADDON) {
      mustExist(path.join(path.dirname(cfg.addon), "build", "edgellm.node"), "the native addon",
        "build the edgellm_node target first (or set EDGELLM_NODE_ADDON)");
    }
  }
  if (runs.includes("nlc")) {
    mustExist(path.join(HERE, "node_modules", "node-llama-cpp", "package.json"), "node-llama-cpp",
      "run `npm ci` in bench/node");
  }
}

/** One measured run with the share of the CPUs that other processes took meanwhile. */
async function measuredRun(name, cfg, round) {
  const before = cpuSnapshot();
  const r = await runOne(name, cfg);
  r.foreignCpuPct = foreignCpuPct(before, cpuSnapshot());
  r.round = round;
  r.loadAverage1m = os.loadavg()[0];
  return r;
}

/** Runs `rounds` rounds of `runs`, order rotated per round. A round during which other
 * processes took more than BUSY_CPU_PCT of the CPUs is run again, up to `retryBusy` times. */
async function runRounds(cfg, runs, rounds, retryBusy, log) {
  const results = Object.fromEntries(runs.map((r) => [r, []]));
  const discarded = [];
  for (let round = 0; round < rounds; ++round) {
    const order = runs.map((_, i) => runs[(i + round) % runs.length]);
    for (let attempt = 0; ; ++attempt) {
      const done = [];
      for (const name of order) {
        const r = await measuredRun(name, cfg, round);
        done.push([name, r]);
        log(`  round ${round + 1}/${rounds} ${name.padEnd(3)}: decode ${r.decodeTps.toFixed(2)} ` +
          `tok/s, TTFT ${r.ttftMs.toFixed(1)} ms, ${r.nGen} tokens (${r.finishReason}), ` +
          `other processes ${r.foreignCpuPct.toFixed(0)}% CPU`);
      }
      const busy = done.some(([, r]) => r.foreignCpuPct > BUSY_CPU_PCT);
      if (busy && attempt < retryBusy) {
        log(`  round ${round + 1}: other processes used the CPUs; running it again in 10 s`);
        discarded.push(Object.fromEntries(done));
        await sleep(10000);
        continue;
      }
      for (const [name, r] of done) results[name].push(r);
      break;
    }
  }
  return { results, discarded };
}

async function main() {
  const a = parseCli(process.argv.slice(2));
  if (a.help) {
    console.log(HELP);
    return;
  }
  if (a["from-json"]) {
    const saved = JSON.parse(fs.readFileSync(a["from-json"], "utf8"));
    console.log(report(saved.meta, saved.runs).text);
    return;
  }
  const parts = new Set(a.parts.split(",").map((s) => s.trim()).filter(Boolean));
  for (const p of parts) if (!PARTS.includes(p)) throw new Error(`--parts: unknown part "${p}"`);
  const model = path.resolve(a.model);
  mustExist(model, "model", "make it with build/bin/edgellm synth --preset qwen2.5-1.5b " +
    "--type Q4_K_M -o models/qwen2.5-1.5b-Q4_K_M.gguf, or pass --model");
  const cfg = {
    model,
    threads: a.threads ? positiveInt("threads", a.threads) : physicalCores(),
    ctx: positiveInt("ctx", a.ctx),
    batch: positiveInt("batch", a.batch),
    tokens: positiveInt("tokens", a.tokens),
    prompt: a["prompt-file"] ? fs.readFileSync(a["prompt-file"], "utf8") : a.prompt,
    loadMode: resolveLoadMode(a["load-mode"], model),
    idleMs: positiveInt("idle-ms", a["idle-ms"]),
    cli: path.resolve(a.cli),
    addon: path.resolve(a.addon),
    ignoreEos: !a["no-ignore-eos"],
  };
  const rounds = positiveInt("rounds", a.rounds);
  const retryBusy = Number(a["retry-busy"]);
  if (!Number.isInteger(retryBusy) || retryBusy < 0) throw new Error("--retry-busy must be >= 0");
  const runs = runsFor(parts);
  await checkPrerequisites(cfg, runs);

  const log = (s) => process.stderr.write(s + "\n");
  log(`bridge_bench: ${shown(model)}, ${cfg.threads} threads, ctx ${cfg.ctx}, ` +
    `${cfg.tokens} tokens, ${rounds} rounds, ${cfg.loadMode}, runs ${runs.join(" ")}, ` +
    `load average ${os.loadavg().map((x) => x.toFixed(2)).join(" ")}`);
  const t0 = Date.now();
  primePageCache(model);
  const { results, discarded } = await runRounds(cfg, runs, rounds, retryBusy, log);
  const loadAfter = os.loadavg();
  log(`bridge_bench: ${((Date.now() - t0) / 1000).toFixed(0)} s, load average after ` +
    loadAfter.map((x) => x.toFixed(2)).join(" "));

  const meta = {
    model: shown(model), threads: cfg.threads, ctx: cfg.ctx, batch: cfg.batch,
    tokens: cfg.tokens, rounds, loadMode: cfg.loadMode, ignoreEos: cfg.ignoreEos,
    prompt: cfg.prompt, node: process.version, cpus: os.cpus()[0]?.model ?? "?",
    loadAverageAfter: loadAfter, wallS: (Date.now() - t0) / 1000, discardedRounds: discarded.length,
  };
  const { summary, text } = report(meta, results);
  if (a.json) console.log(JSON.stringify({ meta, summary, runs: results, discarded }, null, 1));
  else console.log(text);
}

main().catch((err) => {
  console.error(`bridge_bench: error: ${err.message}`);
  process.exit(1);
});

#!/usr/bin/env node
// Embedding throughput from Node, side by side in one run, on the same file, threads and texts:
//   nlc:     node-llama-cpp@3.21.1, createEmbeddingContext().getEmbeddingFor(text) per text (its
//            API embeds one text per call);
//   edgellm: edgellm's Node API, loadEmbedder(path, {threads}).embed(texts), when
//            bindings/node exports it;
//   serve:   `edgellm serve --embedding-model` over HTTP /v1/embeddings, the texts as one array
//            (the library's figure as a Node app reaches it without the addon).
// The texts are edgellm-embedbench's (--dump-texts): 256 texts of 16-128 tokens, English and
// Chinese. nlc and edgellm run in a fresh child process per round (load, one warm-up call, then
// the timed calls); serve is started once. Rounds rotate the order; ratios are medians of
// per-round ratios (throughput: >= 1 means edgellm is faster).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "..", "..");
const BIN = (name) => path.join(ROOT, "build", "bin", name);

const HELP = `Usage: node bench/node/embed_bench.mjs [options]

  -m, --model PATH   embedding model (default build/fixtures/minilm-l6-Q8_0.gguf)
  -t, --threads N    threads for every side (default 2)
  -r, --rounds N     rounds; each runs every side once, order rotated (default 3)
      --texts FILE   texts, one a line (default: build/bin/edgellm-embedbench --dump-texts)
      --sides LIST   comma list of nlc,edgellm,serve (default all; edgellm is skipped when
                     bindings/node has no loadEmbedder)
      --json         print one JSON object
  -h, --help         this text`;

// ---- child side: one measured run in a fresh process --------------------------------------

async function childNlc(cfg, texts) {
  const { getLlama } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true,
                                 usePrebuiltBinaries: true, maxThreads: cfg.threads,
                                 logLevel: "error", progressLogs: false });
  const model = await llama.loadModel({ modelPath: cfg.model, gpuLayers: 0 });
  const ctx = await model.createEmbeddingContext({ contextSize: 512, batchSize: 512,
                                                   threads: cfg.threads });
  let tokens = 0;
  for (const t of texts) tokens += ctx.calculateInputLength(t);
  await ctx.getEmbeddingFor(texts[0]); // warm-up
  const t0 = performance.now();
  const first = [];
  for (const t of texts) {
    const e = await ctx.getEmbeddingFor(t);
    if (first.length === 0) first.push(...e.vector);
  }
  const ms = performance.now() - t0;
  await ctx.dispose();
  await model.dispose();
  await llama.dispose();
  return { ms, tokens, first };
}

async function childEdgellm(cfg, texts) {
  const mod = await import(pathToFileURL(cfg.addon).href);
  const api = mod.loadEmbedder ? mod : mod.default;
  const embedder = await api.loadEmbedder(cfg.model, { threads: cfg.threads });
  await embedder.embed([texts[0]]); // warm-up
  const t0 = performance.now();
  const vectors = await embedder.embed(texts);
  const ms = performance.now() - t0;
  if (vectors.length !== texts.length) throw new Error(`embed returned ${vectors.length} vectors`);
  const first = Array.from(vectors[0]);
  if (embedder.dispose) await embedder.dispose();
  return { ms, tokens: NaN, first };
}

async function child(kind, cfgJson) {
  const cfg = JSON.parse(cfgJson);
  const texts = fs.readFileSync(cfg.texts, "utf8").split("\n").filter((l) => l.length > 0);
  const r = await (kind === "nlc" ? childNlc : childEdgellm)(cfg, texts);
  process.stdout.write(`@@RESULT ${JSON.stringify(r)}\n`);
}

// ---- parent side ----------------------------------------------------------------------------

function runChild(kind, cfg) {
  const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--child", kind,
                           JSON.stringify(cfg)], { cwd: HERE, encoding: "utf8",
                           stdio: ["ignore", "pipe", "pipe"], maxBuffer: 1 << 26 });
  const line = out.split("\n").find((l) => l.startsWith("@@RESULT "));
  if (!line) throw new Error(`${kind} child printed no result: ${out.slice(-1000)}`);
  return JSON.parse(line.slice(9));
}

async function startServe(cfg) {
  const child = spawn(BIN("edgellm"), ["serve", "--embedding-model", cfg.model, "--port", "0",
                                       "--threads", String(cfg.threads)],
                      { stdio: ["ignore", "pipe", "pipe"] });
  process.on("exit", () => child.kill("SIGKILL"));
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { err += d; });
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`edgellm serve exited: ${err.slice(-2000)}`);
    if (Date.now() - t0 > 120_000) throw new Error(`edgellm serve did not start: ${err.slice(-2000)}`);
    const url = (out.match(/http:\/\/[0-9.]+:\d+/) || [])[0];
    if (url) {
      try {
        if ((await fetch(`${url}/health`)).ok) return { child, url };
      } catch { /* not yet */ }
    }
    await sleep(200);
  }
}

// node:http without keep-alive: between the timed calls the child runs block this process's
// event loop for longer than serve keeps an idle connection, and fetch would reuse a closed one.
function postJson(url, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent: false,
                                    headers: { "content-type": "application/json" } }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (d) => { data += d; });
      res.on("end", () => resolve({ status: res.statusCode, json: JSON.parse(data) }));
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

async function serveEmbed(url, texts) {
  const t0 = performance.now();
  const r = await postJson(`${url}/v1/embeddings`, { input: texts, model: "m", encoding_format: "float" });
  const ms = performance.now() - t0;
  if (r.status !== 200) throw new Error(`serve /v1/embeddings -> ${r.status}: ${JSON.stringify(r.json)}`);
  return { ms, tokens: r.json.usage.prompt_tokens, first: r.json.data[0].embedding };
}

const cosine = (u, v) => {
  let uv = 0, uu = 0, vv = 0;
  for (let i = 0; i < u.length; ++i) { uv += u[i] * v[i]; uu += u[i] * u[i]; vv += v[i] * v[i]; }
  return uv / Math.sqrt(uu * vv);
};

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const n = v.length;
  return n === 0 ? NaN : n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
};

async function hasLoadEmbedder(addon) {
  try {
    const mod = await import(pathToFileURL(addon).href);
    return typeof (mod.loadEmbedder ?? mod.default?.loadEmbedder) === "function";
  } catch {
    return false;
  }
}

async function main() {
  const { values: a } = parseArgs({
    options: {
      model: { type: "string", short: "m", default: path.join(ROOT, "build/fixtures/minilm-l6-Q8_0.gguf") },
      threads: { type: "string", short: "t", default: "2" },
      rounds: { type: "string", short: "r", default: "3" },
      texts: { type: "string" },
      sides: { type: "string", default: "nlc,edgellm,serve" },
      json: { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (a.help) {
    console.log(HELP);
    return;
  }
  const log = (s) => process.stderr.write(s + "\n");
  const cfg = { model: path.resolve(a.model), threads: Number(a.threads),
                addon: path.join(ROOT, "bindings", "node", "index.js") };
  if (!fs.existsSync(cfg.model)) throw new Error(`${cfg.model} not found (edgellm synth --help)`);
  if (!fs.existsSync(path.join(HERE, "node_modules", "node-llama-cpp"))) {
    throw new Error("node-llama-cpp is not installed: run `npm ci` in bench/node");
  }
  cfg.texts = a.texts ? path.resolve(a.texts) : path.join(os.tmpdir(), `embed-texts-${process.pid}.txt`);
  if (!a.texts) {
    execFileSync(BIN("edgellm-embedbench"), ["-m", cfg.model, "--dump-texts", cfg.texts],
                 { stdio: "inherit" });
    process.on("exit", () => fs.rmSync(cfg.texts, { force: true }));
  }
  const texts = fs.readFileSync(cfg.texts, "utf8").split("\n").filter((l) => l.length > 0);
  let sides = a.sides.split(",").map((s) => s.trim());
  const notes = [];
  if (sides.includes("edgellm") && !(await hasLoadEmbedder(cfg.addon))) {
    sides = sides.filter((s) => s !== "edgellm");
    notes.push("bindings/node has no loadEmbedder yet: the edgellm side is serve only");
    log(notes.at(-1));
  }
  const serve = sides.includes("serve") ? await startServe(cfg) : null;
  const rounds = Number(a.rounds);
  const runs = Object.fromEntries(sides.map((s) => [s, []]));
  try {
    if (serve) await serveEmbed(serve.url, texts.slice(0, 16)); // warm-up
    for (let r = 0; r < rounds; ++r) {
      const order = sides.map((_, i) => sides[(i + r) % sides.length]);
      for (const side of order) {
        const res = side === "serve" ? await serveEmbed(serve.url, texts) : runChild(side, cfg);
        runs[side].push(res);
      }
      log(`  round ${r + 1}/${rounds}: ` + sides.map((s) => `${s} ${runs[s][r].ms.toFixed(0)} ms`).join(", "));
    }
  } finally {
    if (serve) serve.child.kill("SIGTERM");
  }
  const tokens = runs.serve?.[0]?.tokens ?? runs.nlc?.[0]?.tokens;
  const summary = { model: path.relative(ROOT, cfg.model), threads: cfg.threads, rounds,
                    texts: texts.length, tokens, nlcTokens: runs.nlc?.[0]?.tokens, notes, sides: {} };
  for (const s of sides) {
    summary.sides[s] = { msMedian: median(runs[s].map((x) => x.ms)),
                         tokPerS: (1000 * tokens) / median(runs[s].map((x) => x.ms)),
                         ms: runs[s].map((x) => x.ms) };
  }
  if (runs.nlc) {
    for (const s of sides.filter((x) => x !== "nlc")) {
      summary.sides[s].vsNlc = median(runs[s].map((x, i) => runs.nlc[i].ms / x.ms));
      // The first text's vectors, as a check that both sides embed the same thing.
      summary.sides[s].cosineVsNlc = cosine(runs[s][0].first, runs.nlc[0].first);
    }
  }
  if (a.json) {
    console.log(JSON.stringify(summary, null, 1));
    return;
  }
  console.log(`${summary.model}: ${texts.length} texts, ${tokens} tokens, ${cfg.threads} threads, ` +
              `${rounds} rounds`);
  for (const [s, v] of Object.entries(summary.sides)) {
    console.log(`  ${s.padEnd(8)} ${v.tokPerS.toFixed(0).padStart(7)} tok/s` +
                (v.vsNlc ? `  ${v.vsNlc.toFixed(2)}x node-llama-cpp (first text's vectors: cosine ` +
                           `${v.cosineVsNlc.toFixed(6)})` : ""));
  }
  for (const n of notes) console.log(`  note: ${n}`);
}

if (process.argv[2] === "--child") {
  child(process.argv[3], process.argv[4]).catch((e) => {
    console.error(`embed_bench child: ${e && e.stack ? e.stack : e}`);
    process.exit(1);
  });
} else {
  main().catch((e) => {
    console.error(`embed_bench: error: ${e.message}`);
    process.exit(1);
  });
}

#!/usr/bin/env node
// A scripted multi-turn chat, time to first token per turn, side by side:
//   serve: edgellm serve vs llama.cpp's llama-server (same file, threads, context; prompt
//          caching on), driven through the official `openai` npm client, streamed;
//   node:  edgellm's Node API (model.conversation()) vs node-llama-cpp@3.21.1's
//          LlamaChatSession, each in a child process of its own (chat_runner.mjs).
// In both parts the two sides alternate turn by turn, which side goes first alternating too.
// Prints TTFT per turn and the ratio edgellm / reference (lower is better; 1.0 = as fast).
// --json for one object.
//
// llama-server runs with --skip-chat-parsing: edgellm serve returns the text as generated, and
// llama-server would otherwise parse Qwen2.5's tool-call format out of every reply, which the
// random weights' output fails ("does not match the expected peg-native format").
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";

import { userTurn } from "./chat_script.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const bin = (name) => path.join(repo, "build", "bin", name);

const { values: opt } = parseArgs({
  options: {
    model: { type: "string", short: "m", default: path.join(repo, "models", "qwen2.5-1.5b-Q4_K_M.gguf") },
    turns: { type: "string", default: "10" },
    threads: { type: "string", default: "2" },
    ctx: { type: "string", default: "4096" },
    reply: { type: "string", default: "48" },
    rounds: { type: "string", default: "2" },
    gap: { type: "string", default: "0" },
    parts: { type: "string", default: "serve,node" },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (opt.help) {
  console.log("usage: node bench/node/chat_bench.mjs [-m MODEL] [--turns 10] [--threads 2] " +
              "[--ctx 4096] [--reply 48] [--rounds 2] [--gap MS (a pause before each of --parts node's " +
              "timed turns, as a user's typing gives: default 0, back to back)] [--parts serve,node] [--json]");
  process.exit(0);
}
const cfg = { model: path.resolve(opt.model), turns: Number(opt.turns), threads: Number(opt.threads),
              ctx: Number(opt.ctx), reply: Number(opt.reply), rounds: Number(opt.rounds) };
if (!existsSync(cfg.model)) {
  console.error(`chat_bench: ${cfg.model} not found: make it with\n  build/bin/edgellm synth ` +
                "--preset qwen2.5-1.5b --type Q4_K_M -o models/qwen2.5-1.5b-Q4_K_M.gguf");
  process.exit(1);
}
const log = (...a) => { if (!opt.json) console.error(...a); };

// Starts a server process; resolves once /health answers at `knownUrl`, or at the address the
// process prints on stdout when `knownUrl` is null.
async function startServer(name, args, knownUrl) {
  const child = spawn(bin(name), args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { err += d; });
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${err.slice(-2000)}`);
    if (Date.now() - t0 > 300_000) throw new Error(`${name} did not start: ${err.slice(-2000)}`);
    const url = knownUrl ?? (out.match(/http:\/\/[0-9.]+:\d+/) || [])[0];
    if (url) {
      try {
        const r = await fetch(`${url}/health`);
        if (r.ok) return { child, url };
      } catch { /* not yet */ }
    }
    await sleep(200);
  }
}

function freePort() {
  return 20000 + Math.floor(Math.random() * 20000);
}

async function streamedTurn(client, messages) {
  const t0 = performance.now();
  let ttft = NaN;
  let text = "";
  const stream = await client.chat.completions.create({
    model: "bench", messages, stream: true, temperature: 0, max_tokens: cfg.reply,
  });
  for await (const chunk of stream) {
    const piece = chunk.choices?.[0]?.delta?.content ?? "";
    if (piece && Number.isNaN(ttft)) ttft = performance.now() - t0;
    text += piece;
  }
  return { ttft, text };
}

async function servePart() {
  const port = freePort();
  const llamaUrl = `http://127.0.0.1:${port}`;
  log("serve: starting edgellm serve and llama-server ...");
  const edge = await startServer("edgellm", ["serve", "-m", cfg.model, "--port", "0", "--ctx",
                                             String(cfg.ctx), "--threads", String(cfg.threads)], null);
  let ref;
  try {
    ref = await startServer("llama-server", ["-m", cfg.model, "--port", String(port), "-t",
                                              String(cfg.threads), "-tb", String(cfg.threads), "-c",
                                              String(cfg.ctx), "-np", "1", "--jinja",
                                              "--skip-chat-parsing"], llamaUrl);
  } catch (e) {
    edge.child.kill();
    throw e;
  }
  const sides = {
    edgellm: { client: new OpenAI({ baseURL: `${edge.url}/v1`, apiKey: "none" }), messages: [] },
    "llama-server": { client: new OpenAI({ baseURL: `${llamaUrl}/v1`, apiKey: "none" }), messages: [] },
  };
  const rows = [];
  try {
    for (let t = 0; t < cfg.turns; t++) {
      const order = t % 2 === 0 ? ["edgellm", "llama-server"] : ["llama-server", "edgellm"];
      const row = { turn: t + 1 };
      for (const name of order) {
        const s = sides[name];
        s.messages.push({ role: "user", content: userTurn(t) });
        const r = await streamedTurn(s.client, s.messages);
        s.messages.push({ role: "assistant", content: r.text });
        row[name] = r.ttft;
      }
      row.ratio = row.edgellm / row["llama-server"];
      log(`  turn ${String(t + 1).padStart(2)}: TTFT edgellm ${row.edgellm.toFixed(1)} ms, ` +
          `llama-server ${row["llama-server"].toFixed(1)} ms, ratio ${row.ratio.toFixed(3)}`);
      rows.push(row);
    }
  } finally {
    edge.child.kill("SIGTERM");
    ref.child.kill("SIGTERM");
  }
  return summarize(rows, "llama-server");
}

// One child process per library (chat_runner.mjs), driven turn by turn: returns
// { ready, turn() -> Promise<{ttft, prefilled}> }.
function startChild(lib) {
  const config = JSON.stringify({ ...cfg, addon: path.join(repo, "bindings", "node", "index.js") });
  const child = spawn(process.execPath, [path.join(here, "chat_runner.mjs"), lib, config],
                      { stdio: ["pipe", "pipe", "inherit"] });
  const waiting = [];
  let buf = "";
  child.stdout.on("data", (d) => {
    buf += d;
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line === "@@READY") waiting.shift()?.resolve();
      else if (line.startsWith("@@TURN ")) waiting.shift()?.resolve(JSON.parse(line.slice(7)));
    }
  });
  child.on("exit", (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`chat_runner ${lib} exited (${code})`));
  });
  const next = () => new Promise((resolve, reject) => waiting.push({ resolve, reject }));
  const ready = next();
  return {
    ready,
    turn() { const p = next(); child.stdin.write("go\n"); return p; },
    done: new Promise((resolve) => child.on("exit", resolve)),
  };
}

const gapMs = Number(opt.gap);
if (!Number.isFinite(gapMs) || gapMs < 0 || gapMs > 60_000) {
  console.error(`--gap ${opt.gap}: use milliseconds from 0 to 60000`);
  process.exit(2);
}

async function nodePart() {
  log(`node: edgellm Node API and node-llama-cpp LlamaChatSession, ${cfg.rounds} rounds; per ` +
      "round one child process each, both loaded, turns interleaved (order alternating) ...");
  const runs = { edgellm: [], nlc: [] };
  const prefilled = { edgellm: [], nlc: [] };
  for (let r = 0; r < cfg.rounds; r++) {
    const kids = { edgellm: startChild("edgellm"), nlc: startChild("nlc") };
    await Promise.all([kids.edgellm.ready, kids.nlc.ready]);
    runs.edgellm.push([]);
    runs.nlc.push([]);
    for (let t = 0; t < cfg.turns; t++) {
      for (const lib of (r + t) % 2 === 0 ? ["edgellm", "nlc"] : ["nlc", "edgellm"]) {
        if (gapMs > 0) await sleep(gapMs);
        const res = await kids[lib].turn();
        runs[lib].at(-1).push(res.ttft);
        prefilled[lib][t] = res.prefilled;
      }
    }
    await Promise.all([kids.edgellm.done, kids.nlc.done]);
  }
  const med = (xs) => { const v = [...xs].sort((a, b) => a - b); const n = v.length;
                        return n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; };
  const rows = [];
  for (let t = 0; t < cfg.turns; t++) {
    const e = med(runs.edgellm.map((x) => x[t]));
    const n = med(runs.nlc.map((x) => x[t]));
    rows.push({ turn: t + 1, edgellm: e, "node-llama-cpp": n, ratio: e / n,
                edgellm_prefilled_tokens: prefilled.edgellm[t],
                node_llama_cpp_prefilled_tokens: prefilled.nlc[t] });
  }
  for (const r of rows) {
    log(`  turn ${String(r.turn).padStart(2)}: TTFT edgellm ${r.edgellm.toFixed(1)} ms ` +
        `(prefilled ${r.edgellm_prefilled_tokens} tok), node-llama-cpp ` +
        `${r["node-llama-cpp"].toFixed(1)} ms (${r.node_llama_cpp_prefilled_tokens} tok), ` +
        `ratio ${r.ratio.toFixed(3)}`);
  }
  return summarize(rows, "node-llama-cpp");
}

function summarize(rows, ref) {
  const ratios = rows.map((r) => r.ratio).sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)];
  return { reference: ref, turns: rows, median_ratio: median, max_ratio: ratios.at(-1),
           edgellm_last_over_first: rows.at(-1).edgellm / rows[0].edgellm,
           reference_last_over_first: rows.at(-1)[ref] / rows[0][ref] };
}

const result = { model: cfg.model, threads: cfg.threads, ctx: cfg.ctx, turns: cfg.turns };
const parts = opt.parts.split(",");
if (parts.includes("serve")) result.serve = await servePart();
if (parts.includes("node")) result.node = await nodePart();
if (opt.json) {
  console.log(JSON.stringify(result, null, 2));
} else {
  for (const k of ["serve", "node"]) {
    if (!result[k]) continue;
    const r = result[k];
    console.log(`${k}: edgellm / ${r.reference} TTFT per turn: median ${r.median_ratio.toFixed(3)}, ` +
                `worst ${r.max_ratio.toFixed(3)}; turn ${cfg.turns}/turn 1: edgellm ` +
                `${r.edgellm_last_over_first.toFixed(2)}x, ${r.reference} ` +
                `${r.reference_last_over_first.toFixed(2)}x`);
  }
}

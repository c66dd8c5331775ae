#!/usr/bin/env node
// Speculative decoding against llama.cpp's own, through the HTTP API (issue 26): edgellm serve
// (n-gram lookup + jump-forward, the default, and a request's `speculative: false`) and
// llama-server (no speculation, `--spec-default` = ngram-mod, and `--spec-type ngram-simple`),
// the same file, prompts, threads and context, greedy, through the official `openai` client.
// Per prompt: decode tokens/s measured by the client (completion tokens over the request's
// wall time; the prompt is cached after round 1 on both servers), the guesses kept, and whether
// every side's text is the same. Sides alternate prompt by prompt. --json for one object.
// --raw sends the prompts to /v1/completions as text (no chat template).
//   node bench/node/spec_bench.mjs [-m assets/edgellm-tiny-F32.gguf] [--rounds 3] [--reply 64]
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import OpenAI from "openai";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const bin = (name) => path.join(repo, "build", "bin", name);
const { values: opt } = parseArgs({
  options: {
    model: { type: "string", short: "m", default: path.join(repo, "assets", "edgellm-tiny-F32.gguf") },
    threads: { type: "string", default: "2" },
    ctx: { type: "string", default: "256" },
    reply: { type: "string", default: "64" },
    rounds: { type: "string", default: "3" },
    raw: { type: "boolean", default: false },
    copy: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (opt.help) {
  console.log("usage: node bench/node/spec_bench.mjs [-m MODEL] [--threads 2] [--ctx 256 (the committed model's training context)] " +
              "[--reply 64] [--rounds 3] [--raw (/v1/completions with the prompt as text: for models whose " +
              "chat output llama-server cannot parse, e.g. the random-weight fixtures)] [--copy (rewrites whose " +
              "answers copy the prompt, for a model trained on the rewrite task: docs/speculative.md)] [--json]");
  process.exit(0);
}
const log = (...a) => { if (!opt.json) console.error(...a); };
// The committed model's tasks whose answers copy the prompt (docs/training.md), or with --copy
// rewrites for a model trained on the rewrite task (its answer is the text with a name replaced).
const prompts = opt.copy ? [
  "replace Li Lei with Anna: Li Lei flies to Chengdu on Friday. The meeting with Li Lei starts at 9:30 tomorrow. Li Lei bought 4 tickets in Tokyo.",
  "replace Zhang Wei with Tom: Zhang Wei takes a taxi to the museum. Zhang Wei likes folk music. Zhang Wei flies to Paris today.",
  "把王芳换成刘洋：王芳周五要去杭州出差。王芳在巴黎买了3个杯子。和王芳的会议明天10:15开始。",
  "replace Chen Jing with Wang Fang: The meeting with Chen Jing starts at 14:45 on Monday. Chen Jing bought 7 shirts in Berlin. Chen Jing flies to Suzhou this weekend.",
] : [
  "summary: Wang Fang will visit Chengdu on Friday and call Li Lei.",
  "summary: Liu Yang will visit Shanghai on Sunday and call Chen Jing.",
  "city: Zhang Wei flies to Hangzhou on Monday.",
  "name: Chen Jing meets us in Wuhan tomorrow.",
  "x=3; x=x+4; print(x)",
];

async function startServer(name, args, url) {
  const child = spawn(bin(name), args, { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { err += d; });
  const t0 = Date.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${err.slice(-2000)}`);
    if (Date.now() - t0 > 120_000) throw new Error(`${name} did not start: ${err.slice(-2000)}`);
    const u = url ?? (out.match(/http:\/\/[0-9.]+:\d+/) || [])[0];
    if (u) {
      try {
        if ((await fetch(`${u}/health`)).ok) return { child, url: u };
      } catch { /* not yet */ }
    }
    await sleep(200);
  }
}

// With --raw no chat template and no output parsing (llama-server's parser refuses a random
// model's text with a 500 even on /v1/completions when --jinja is on).
const common = ["-t", opt.threads, "-tb", opt.threads, "-c", opt.ctx, "-np", "1",
                ...(opt.raw ? [] : ["--jinja", "--skip-chat-parsing"])];
const llamaSides = [["llama-server", []], ["llama-server --spec-default", ["--spec-default"]],
                    ["llama-server ngram-simple", ["--spec-type", "ngram-simple"]]];
const servers = [];
const sides = [];
try {
  log("starting edgellm serve and three llama-servers ...");
  const edge = await startServer("edgellm", ["serve", "-m", opt.model, "--port", "0", "--ctx", opt.ctx,
                                             "--threads", opt.threads], null);
  servers.push(edge.child);
  const client = new OpenAI({ baseURL: `${edge.url}/v1`, apiKey: "none" });
  sides.push({ name: "edgellm", client, extra: {} });
  sides.push({ name: "edgellm off", client, extra: { speculative: false } });
  for (const [name, args] of llamaSides) {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const url = `http://127.0.0.1:${port}`;
    const s = await startServer("llama-server", ["-m", opt.model, "--port", String(port), ...common, ...args], url);
    servers.push(s.child);
    sides.push({ name, client: new OpenAI({ baseURL: `${url}/v1`, apiKey: "none" }), extra: {} });
  }
  const tally = Object.fromEntries(sides.map((s) => [s.name, { tps: [], tokens: 0, kept: 0, drafted: 0, errors: 0 }]));
  let differ = 0;
  const differing = [];
  for (let r = 0; r < Number(opt.rounds); r++) {
    for (const [i, p] of prompts.entries()) {
      const order = (r + i) % 2 === 0 ? sides : [...sides].reverse();
      const texts = {};
      for (const s of order) {
        const t0 = performance.now();
        const req = { model: "bench", temperature: 0, max_tokens: Number(opt.reply), ...s.extra };
        let res;
        try {
          res = opt.raw ? await s.client.completions.create({ ...req, prompt: p })
                        : await s.client.chat.completions.create({
                          ...req, messages: [{ role: "user", content: p }] });
        } catch (e) {
          // A server's error is the side's result, counted and shown; the run goes on.
          tally[s.name].errors++;
          log(`  ${s.name}, "${p}": ${e.message}`);
          continue;
        }
        const ms = performance.now() - t0;
        const n = res.usage.completion_tokens;
        const t = tally[s.name];
        if (r > 0) t.tps.push(n * 1000 / ms);  // round 1 prefills the prompt
        t.tokens += n;
        t.kept += res.usage.speculative?.accepted ?? res.timings?.draft_n_accepted ?? 0;
        t.drafted += res.usage.speculative?.drafted ?? res.timings?.draft_n ?? 0;
        texts[s.name] = opt.raw ? res.choices[0].text : res.choices[0].message.content;
      }
      if (new Set(Object.values(texts)).size !== 1) {
        differ++;
        // Which sides' texts are not plain edgellm's (a side whose request failed is left out).
        const ref0 = texts["edgellm off"];
        differing.push({ prompt: p, round: r + 1,
                         not_as_edgellm_off: Object.keys(texts).filter((k) => texts[k] !== ref0) });
        log(`  "${p}": the texts differ: ${JSON.stringify(texts)}`);
      }
    }
  }
  const med = (xs) => { const v = [...xs].sort((a, b) => a - b); const n = v.length;
                        return n === 0 ? 0 : n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2; };
  const result = { model: opt.model, threads: Number(opt.threads), rounds: Number(opt.rounds),
                   prompts: prompts.length, texts_differ: differ, differing, sides: {} };
  const ref = med(tally["llama-server --spec-default"].tps);
  for (const s of sides) {
    const t = tally[s.name];
    result.sides[s.name] = { tps: med(t.tps), tokens: t.tokens, drafted: t.drafted, kept: t.kept,
                             errors: t.errors, vs_llama_spec_default: med(t.tps) / ref };
    log(`  ${s.name.padEnd(28)} ${med(t.tps).toFixed(1).padStart(8)} tok/s  kept ${t.kept}/${t.drafted}  ` +
        `x${(med(t.tps) / ref).toFixed(3)} of llama-server --spec-default` +
        (t.errors ? `  (${t.errors} requests failed)` : ""));
  }
  log(differ === 0 ? "  every side's text is the same" : `  ${differ} prompts gave different texts`);
  if (opt.json) console.log(JSON.stringify(result, null, 2));
} finally {
  for (const c of servers) c.kill("SIGTERM");
}

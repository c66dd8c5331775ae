#!/usr/bin/env node
// Whether greedy replies repeat exactly run after run with speculation's adaptive choice on
// (the default), with every guess checked (`adaptive: false`) and with speculation off
// (docs/speculative.md, "Reproducible output"). Each round is a process of its own (an app
// started again) that loads the model (a new session: a new decode-cost table) and generates
// the same greedy reply `--turns` times, each setting the thermal level to COOL at its first
// token and the odd ones starting at OVERHEATED (one thread, then all: the thread count
// changes mid-reply, as bindings/node/test/signals.test.js does); it counts the later replies
// whose text is not the process's first. --json for one object.
//   node bench/node/spec_repro.mjs [-m MODEL] [--prompt heat] [--reply 400] [--rounds 8]
import { execFileSync } from "node:child_process";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "..", "..");
const require = createRequire(import.meta.url);
const { values: opt } = parseArgs({
  options: {
    model: { type: "string", short: "m" },
    prompt: { type: "string", default: "heat" },
    reply: { type: "string", default: "400" },
    turns: { type: "string", default: "4" },
    rounds: { type: "string", default: "8" },
    threads: { type: "string", default: "2" },
    json: { type: "boolean", default: false },
    child: { type: "string" },
    help: { type: "boolean", short: "h", default: false },
  },
});
if (opt.help) {
  console.log("usage: node bench/node/spec_repro.mjs [-m MODEL (default: the tiny random-weight " +
              "fixture, made on first use)] [--prompt heat] [--reply 400] [--turns 4] [--rounds 8] " +
              "[--threads 2] [--json]");
  process.exit(0);
}
const count = (name, min, max) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min || v > max) {
    console.error(`--${name} ${opt[name]}: use a whole number from ${min} to ${max}`);
    process.exit(2);
  }
  return v;
};
const reply = count("reply", 1, 4096);
const turns = count("turns", 2, 64);
const rounds = count("rounds", 1, 1000);
const threads = count("threads", 1, 64);
const edgellm = require(path.join(repo, "bindings", "node"));
const file = opt.model ?? require(path.join(repo, "bindings", "node", "testutil", "fixtures")).model();
const log = (...a) => { if (!opt.json) console.error(...a); };

const modes = [
  { name: "adaptive (default)", speculative: undefined },
  { name: "every guess checked", speculative: { adaptive: false } },
  { name: "off", speculative: false },
];
// One round: a fresh process (as an app started again), one model load, `turns` replies; prints
// how many of the later replies differ from the first, and the guesses kept.
async function round(mode) {
  const m = await edgellm.Model.load(file, { threads, ctx: Math.max(512, reply + 64) });
  let differ = 0;
  let kept = 0;
  try {
    let first;
    for (let t = 0; t < turns; t++) {
      const o = { temperature: 0, ignoreEos: true, maxTokens: reply };
      if (mode.speculative !== undefined) o.speculative = mode.speculative;
      let seen = 0;
      if (t % 2 === 1) edgellm.setThermalLevel(4);
      o.onToken = () => { if (++seen === 1) edgellm.setThermalLevel(0); };
      const r = await m.generate(opt.prompt, o);
      kept += r.stats.specAccepted;
      if (t === 0) first = r.text;
      else if (r.text !== first) differ++;
    }
  } finally {
    await m.dispose();
  }
  return { differ, kept };
}

if (opt.child !== undefined) {
  const mode = modes[Number(opt.child)];
  if (!mode) {
    console.error(`--child ${opt.child}: an internal flag, 0 to ${modes.length - 1}`);
    process.exit(2);
  }
  console.log(JSON.stringify(await round(mode)));
  process.exit(0);
}
const results = [];
for (const [i, mode] of modes.entries()) {
  let differ = 0;
  let kept = 0;
  for (let r = 0; r < rounds; r++) {
    const args = [fileURLToPath(import.meta.url), "--child", String(i), "-m", file, "--prompt",
                  opt.prompt, "--reply", String(reply), "--turns", String(turns), "--threads",
                  String(threads)];
    const out = JSON.parse(execFileSync(process.execPath, args, { encoding: "utf8" }));
    differ += out.differ;
    kept += out.kept;
  }
  const later = rounds * (turns - 1);
  results.push({ mode: mode.name, differ, later, kept });
  log(`${mode.name}: ${differ} of ${later} later replies differ from their process's first ` +
      `(${kept} guesses kept in all)`);
}
if (opt.json) {
  console.log(JSON.stringify({ model: file, prompt: opt.prompt, reply, turns, rounds, threads,
                               results }));
}

// Child side of chat_bench.mjs's "node" part: one library, one process, one scripted
// conversation, driven turn by turn so that the two libraries' turns interleave in time (the
// machine's speed drifts by ±20% over minutes; turns a few seconds apart see the same machine).
// Prints "@@READY" once loaded, then for each "go" line on stdin runs the next turn and prints
// "@@TURN {ttft: ms, prefilled: tokens}"; exits after the last turn.
//   node chat_runner.mjs edgellm|nlc '<config json>'
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

import { userTurn } from "./chat_script.mjs";

async function edgellmSide(cfg) {
  const mod = await import(pathToFileURL(cfg.addon).href);
  const { Model } = mod.Model ? mod : mod.default;
  const model = await Model.load(cfg.model, { threads: cfg.threads, ctx: cfg.ctx });
  const chat = await model.conversation();
  return {
    async turn(t) {
      let first = NaN;
      const t0 = performance.now();
      const r = await chat.send(userTurn(t), {
        temperature: 0, maxTokens: cfg.reply, ignoreEos: true,
        onToken: () => { if (Number.isNaN(first)) first = performance.now() - t0; },
      });
      return { ttft: first, prefilled: r.stats.nPrompt };
    },
    close: () => model.dispose(),
  };
}

async function nlcSide(cfg) {
  const { getLlama, LlamaChatSession } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true,
                                 usePrebuiltBinaries: true, maxThreads: cfg.threads,
                                 logLevel: "error", progressLogs: false });
  const model = await llama.loadModel({ modelPath: cfg.model, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: cfg.ctx, sequences: 1,
                                              threads: { ideal: cfg.threads, min: cfg.threads } });
  const sequence = context.getSequence();
  const session = new LlamaChatSession({ contextSequence: sequence });
  return {
    async turn(t) {
      let first = NaN;
      const inputBefore = sequence.tokenMeter.usedInputTokens;
      let inputAtFirst = NaN;
      const t0 = performance.now();
      await session.prompt(userTurn(t), {
        temperature: 0, maxTokens: cfg.reply,
        onTextChunk: () => {
          if (!Number.isNaN(first)) return;
          first = performance.now() - t0;
          inputAtFirst = sequence.tokenMeter.usedInputTokens;
        },
      });
      return { ttft: first, prefilled: inputAtFirst - inputBefore };
    },
    async close() { await context.dispose(); await model.dispose(); },
  };
}

const [lib, json] = process.argv.slice(2);
const make = { edgellm: edgellmSide, nlc: nlcSide }[lib];
if (!make) {
  console.error("usage: node chat_runner.mjs edgellm|nlc '<config json>' (started by chat_bench.mjs)");
  process.exit(2);
}
const cfg = JSON.parse(json);
const side = await make(cfg);
console.log("@@READY");
let t = 0;
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== "go") continue;
  console.log(`@@TURN ${JSON.stringify(await side.turn(t))}`);
  if (++t === cfg.turns) break;
}
await side.close();
process.exit(0);

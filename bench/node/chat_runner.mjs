// Child side of chat_bench.mjs's "node" part: one library, one process, the whole scripted
// conversation. Prints "@@RESULT {ttft: [ms per turn], prompt: [...]}".
//   node chat_runner.mjs edgellm|nlc '<config json>'
import { pathToFileURL } from "node:url";

import { userTurn } from "./chat_script.mjs";

async function runEdgellm(cfg) {
  const mod = await import(pathToFileURL(cfg.addon).href);
  const { Model } = mod.Model ? mod : mod.default;
  const model = await Model.load(cfg.model, { threads: cfg.threads, ctx: cfg.ctx });
  const chat = await model.conversation();
  const ttft = [];
  const prefilled = [];
  for (let t = 0; t < cfg.turns; t++) {
    let first = NaN;
    const t0 = performance.now();
    const r = await chat.send(userTurn(t), {
      temperature: 0, maxTokens: cfg.reply, ignoreEos: true,
      onToken: () => { if (Number.isNaN(first)) first = performance.now() - t0; },
    });
    ttft.push(first);
    prefilled.push(r.stats.nPrompt);
  }
  await model.dispose();
  return { ttft, prefilled };
}

async function runNlc(cfg) {
  const { getLlama, LlamaChatSession } = await import("node-llama-cpp");
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true,
                                 usePrebuiltBinaries: true, maxThreads: cfg.threads,
                                 logLevel: "error", progressLogs: false });
  const model = await llama.loadModel({ modelPath: cfg.model, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: cfg.ctx, sequences: 1,
                                              threads: { ideal: cfg.threads, min: cfg.threads } });
  const sequence = context.getSequence();
  const session = new LlamaChatSession({ contextSequence: sequence });
  const ttft = [];
  const prefilled = [];
  for (let t = 0; t < cfg.turns; t++) {
    let first = NaN;
    let inputBefore = sequence.tokenMeter.usedInputTokens;
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
    ttft.push(first);
    prefilled.push(inputAtFirst - inputBefore);
  }
  await context.dispose();
  await model.dispose();
  return { ttft, prefilled };
}

const [lib, json] = process.argv.slice(2);
const run = { edgellm: runEdgellm, nlc: runNlc }[lib];
if (!run) {
  console.error("usage: node chat_runner.mjs edgellm|nlc '<config json>' (started by chat_bench.mjs)");
  process.exit(2);
}
const result = await run(JSON.parse(json));
console.log(`@@RESULT ${JSON.stringify(result)}`);
process.exit(0);

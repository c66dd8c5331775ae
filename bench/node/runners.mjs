// Child side of bridge_bench.mjs: one fresh process per measured generation, so every run
// starts from the same state (model loaded, warmed up, nothing else in the heap) and the two
// llama.cpp copies (edgellm's build and node-llama-cpp's prebuilt) never share a process.
//
//   node runners.mjs edgellm|nlc '<config json>'
//
// Prints one line "@@RESULT <json>" on stdout; everything else (library logs) is noise.
import { monitorEventLoopDelay, performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

import { loopDelaySummary } from "./stats.mjs";

const ELD_RESOLUTION_MS = 1;

/** Event-loop delay while nothing runs: the floor that generation-time figures sit on. */
async function idleLoopDelay(ms) {
  const h = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  h.enable();
  await sleep(ms);
  h.disable();
  return loopDelaySummary(h);
}

/** Runs `fn` with the event-loop-delay monitor on; returns [fn's value, summary]. */
async function withLoopDelay(fn) {
  const h = monitorEventLoopDelay({ resolution: ELD_RESOLUTION_MS });
  h.enable();
  try {
    const value = await fn();
    h.disable();
    return [value, loopDelaySummary(h)];
  } finally {
    h.disable();
  }
}

function peakRssBytes() {
  return process.resourceUsage().maxRSS * 1024;
}

async function importEdgellm(indexPath) {
  const mod = await import(pathToFileURL(indexPath).href);
  const api = mod.Model ? mod : mod.default;
  if (!api || !api.Model) throw new Error(`${indexPath} does not export Model`);
  return api;
}

async function runEdgellm(cfg) {
  const api = await importEdgellm(cfg.addon);
  const tLoad = performance.now();
  const model = await api.Model.load(cfg.model, {
    threads: cfg.threads,
    ctx: cfg.ctx,
    batch: cfg.batch,
    loadMode: cfg.loadMode,
    warmup: true,
  });
  const loadWallMs = performance.now() - tLoad;
  const idle = await idleLoopDelay(cfg.idleMs);

  const latencies = [];
  let callbacks = 0;
  let tFirst = NaN;
  let tLast = NaN;
  const tCall = performance.now();
  const [res, loop] = await withLoopDelay(() =>
    model.generate(cfg.prompt, {
      temperature: 0,
      maxTokens: cfg.tokens,
      batchTokens: cfg.batchTokens,
      batchMs: cfg.batchMs,
      ignoreEos: cfg.ignoreEos,
      onToken(_text, info) {
        const now = performance.now();
        if (callbacks === 0) tFirst = now;
        tLast = now;
        ++callbacks;
        latencies.push(info.latencyUs);
      },
    }),
  );
  const tEnd = performance.now();
  const info = model.info;
  await model.dispose();

  const s = res.stats;
  return {
    lib: "edgellm",
    batchTokens: cfg.batchTokens,
    text: res.text,
    finishReason: res.finishReason,
    nPrompt: s.nPrompt,
    nGen: s.nGen,
    // Engine clock (worker thread), same definitions as the CLI's JSON.
    ttftMs: s.ttftMs,
    prefillTps: s.prefillTps,
    decodeTps: s.decodeTps,
    // Caller clock (JS thread): when text became visible to the application.
    firstTextMs: tFirst - tCall,
    callerDecodeTps: callbacks > 1 ? ((s.nGen - 1) * 1000) / (tLast - tFirst) : NaN,
    e2eMs: tEnd - tCall,
    e2eTps: (s.nGen * 1000) / (tEnd - tCall),
    callbacks,
    batches: s.batches,
    latenciesUs: latencies,
    statsDeliveryP50Us: s.deliveryP50Us,
    statsDeliveryP99Us: s.deliveryP99Us,
    loop,
    idle,
    loadMs: info.loadMs,
    loadWallMs,
    warmupMs: info.warmupMs,
    loadMode: info.loadMode,
    threads: info.threads,
    ctx: info.ctx,
    batch: info.batch,
    peakRssBytes: peakRssBytes(),
  };
}

/** node-llama-cpp's warm-up, mirroring edgellm's (Session::Impl::Warmup): BOS (or EOS) plus
 * "Hello" in one batch, then one single-token decode step, then an empty KV cache. */
async function nlcWarmup(model, sequence) {
  const t0 = performance.now();
  const first = model.tokens.bos ?? model.tokens.eos ?? 0;
  const it = sequence.evaluate([first, ...model.tokenize("Hello")], { temperature: 0 });
  await it.next(); // prefill + sample
  await it.next(); // one decode step + sample
  await it.return();
  await sequence.clearHistory();
  return performance.now() - t0;
}

function nlcPromptTokens(model, prompt) {
  const toks = model.tokenize(prompt);
  const bos = model.tokens.bos;
  return model.tokens.shouldPrependBosToken && bos != null ? [bos, ...toks] : toks;
}

async function runNlc(cfg) {
  const { getLlama } = await import("node-llama-cpp");
  const tLoad = performance.now();
  const llama = await getLlama({
    gpu: false,
    build: "never",
    skipDownload: true,
    usePrebuiltBinaries: true,
    maxThreads: cfg.threads,
    logLevel: "error",
    progressLogs: false,
  });
  const model = await llama.loadModel({
    modelPath: cfg.model,
    gpuLayers: 0,
    useMmap: cfg.loadMode === "mmap",
  });
  const context = await model.createContext({
    contextSize: cfg.ctx,
    batchSize: cfg.batch,
    sequences: 1,
    threads: { ideal: cfg.threads, min: cfg.threads },
    flashAttention: "auto", // what llama.cpp's defaults give edgellm
  });
  const sequence = context.getSequence();
  const loadWallMs = performance.now() - tLoad;
  const warmupMs = await nlcWarmup(model, sequence);
  const idle = await idleLoopDelay(cfg.idleMs);

  const generated = [];
  let nPrompt = 0;
  let tFirst = NaN;
  let tLast = NaN;
  let finishReason = "length";
  const tCall = performance.now();
  const [, loop] = await withLoopDelay(async () => {
    const prompt = nlcPromptTokens(model, cfg.prompt);
    nPrompt = prompt.length;
    // Without yieldEogToken the generator ends on an end-of-generation token, as edgellm does
    // without ignoreEos; with it, it yields that token and goes on, as edgellm does with it.
    // Breaking out after `tokens` skips the decode of the last one, as edgellm's loop does.
    const opts = { temperature: 0, yieldEogToken: cfg.ignoreEos };
    for await (const tok of sequence.evaluate(prompt, opts)) {
      const now = performance.now();
      if (generated.length === 0) tFirst = now;
      tLast = now;
      generated.push(tok);
      if (generated.length >= cfg.tokens) break;
    }
    if (generated.length < cfg.tokens) finishReason = "stop";
  });
  const tEnd = performance.now();
  const nGen = generated.length;
  const text = model.detokenize(generated);
  const threads = context.currentThreads;
  const result = {
    lib: "node-llama-cpp",
    text,
    finishReason,
    nPrompt,
    nGen,
    ttftMs: tFirst - tCall,
    firstTextMs: tFirst - tCall,
    decodeTps: nGen > 1 ? ((nGen - 1) * 1000) / (tLast - tFirst) : NaN,
    callerDecodeTps: nGen > 1 ? ((nGen - 1) * 1000) / (tLast - tFirst) : NaN,
    e2eMs: tEnd - tCall,
    e2eTps: (nGen * 1000) / (tEnd - tCall),
    callbacks: nGen,
    loop,
    idle,
    loadWallMs,
    warmupMs,
    loadMode: model.useMmap ? "mmap" : "read",
    threads,
    ctx: context.contextSize,
    batch: context.batchSize,
    flashAttention: context.flashAttention,
    buildType: llama.buildType,
    systemInfo: llama.systemInfo,
    peakRssBytes: peakRssBytes(),
  };
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  return result;
}

const RUNNERS = { edgellm: runEdgellm, nlc: runNlc };

async function main() {
  const [kind, json] = process.argv.slice(2);
  const run = RUNNERS[kind];
  if (!run || !json) {
    console.error("usage: node runners.mjs edgellm|nlc '<config json>' (started by bridge_bench.mjs)");
    process.exit(2);
  }
  const result = await run(JSON.parse(json));
  process.stdout.write(`@@RESULT ${JSON.stringify(result)}\n`);
}

main().catch((err) => {
  console.error(`runners.mjs: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
});

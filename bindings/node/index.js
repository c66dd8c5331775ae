'use strict';
// edgellm for Node.js: the thin JS layer over edgellm.node. Types and contracts: index.d.ts;
// design: docs/node.md. Queueing, AbortSignal and the "settles exactly once, nothing after"
// guarantees live here; everything heavy runs on the addon's worker thread per model.

// @node-only begin (bindings/harmonyos/gen_js.mjs drops this block; on HarmonyOS the module
// is `import native from 'libedgellm.so'`, whose environment cleanup stops the models)
const path = require('node:path');
const fs = require('node:fs');

// The addon: EDGELLM_NODE_ADDON when set, else a build in this checkout (build/edgellm.node),
// else the package's prebuild for this platform and architecture (prebuilds/linux-x64/, ...,
// see prebuilds.js). llama.cpp is linked into it: it needs only the system's libraries.
function loadAddon() {
  const platform = `${process.platform}-${process.arch}`;
  const fromEnv = process.env.EDGELLM_NODE_ADDON;
  const candidates = fromEnv ? [fromEnv] : [
    path.join(__dirname, 'build', 'edgellm.node'),
    path.join(__dirname, 'prebuilds', platform, 'edgellm.node'),
  ];
  const file = candidates.find((f) => fs.existsSync(f));
  if (file === undefined) throw missingAddon(platform, fromEnv);
  try {
    return require(file);
  } catch (cause) {
    const err = new Error(`edgellm: the addon ${file} does not load on ${platform}: ${cause.message}` +
      ' (a prebuild needs glibc 2.34 or later, libstdc++ of GCC 12 or later, and the libcurl, ' +
      'OpenSSL 3, SQLite 3 and libgomp libraries: ' +
      'on Debian/Ubuntu apt install libcurl4 libssl3 libsqlite3-0 libgomp1; or build it from ' +
      'source, see ' +
      'docs/install.md)');
    err.code = 'ERR_EDGELLM_ADDON_LOAD';
    err.cause = cause;
    throw err;
  }
}

function missingAddon(platform, fromEnv) {
  let have = [];
  try {
    have = fs.readdirSync(path.join(__dirname, 'prebuilds'));
  } catch {}
  const err = new Error(fromEnv
    ? `edgellm: EDGELLM_NODE_ADDON is ${fromEnv}, which does not exist`
    : `edgellm: no native addon for ${platform}: this package has prebuilds for ` +
      `${have.length ? have.join(', ') : 'no platform'}. Build one from edgellm's source ` +
      '(bash scripts/setup.sh edgellm_node, docs/install.md) and set EDGELLM_NODE_ADDON to the ' +
      'edgellm.node it writes');
  err.code = 'ERR_EDGELLM_ADDON_MISSING';
  return err;
}

const native = loadAddon();
// @node-only end

// Models not yet disposed. On process exit (process.exit() runs no environment cleanup) the
// addon cancels their generations and frees them before the process tears down.
let liveModels = 0;
// @node-only begin
process.once('exit', () => { if (liveModels > 0) native.shutdown(); });
// @node-only end

function disposedError() {
  const err = new Error('edgellm: the model is disposed; load it again with Model.load()');
  err.code = 'ERR_DISPOSED';
  return err;
}

function abortError(signal) {
  if (signal && signal.reason instanceof Error) return signal.reason;
  const err = new Error('The operation was aborted');
  err.name = 'AbortError';
  err.code = 'ABORT_ERR';
  return err;
}

function emptyStats(queuedMs) {
  return {
    nPrompt: 0, nCached: 0, turnsDropped: 0, tokensDropped: 0, prefillMs: 0, prefillTps: 0,
    ttftMs: 0, nGen: 0, decodeMs: 0, decodeTps: 0,
    peakRssBytes: native.memoryUsage().peakRssBytes, threads: 0, ctx: 0, grammarMs: 0,
    grammarResamples: 0, batches: 0, nMedia: 0, nMediaTokens: 0, mediaDecodeMs: 0,
    mediaEncodeMs: 0, mediaChunksCached: 0, specDrafted: 0, specAccepted: 0, specForced: 0,
    decodeCalls: 0, specDraftDrafted: 0, specDraftAccepted: 0, specDraftMs: 0,
    deliveryP50Us: 0, deliveryP99Us: 0, queuedMs, threadChanges: 0, minThreads: 0, pausedMs: 0,
    reloaded: false,
  };
}

function nativeGenerateOptions(o) {
  const out = {};
  for (const k of ['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'repeatPenalty', 'seed',
                   'chat', 'systemPrompt', 'history', 'reusePrefix', 'stop', 'batchTokens',
                   'batchMs', 'ignoreEos', 'grammar', 'jsonWhitespace', 'speculative']) {
    if (o[k] !== undefined) out[k] = o[k];
  }
  // A JSON schema as an object (or its JSON text): the addon takes the text.
  if (o.jsonSchema !== undefined && o.jsonSchema !== null) {
    out.jsonSchema = typeof o.jsonSchema === 'string' ? o.jsonSchema : JSON.stringify(o.jsonSchema);
  }
  if (o.tools !== undefined) out.tools = nativeTools(o.tools);
  if (o.toolChoice !== undefined) {
    out.toolChoice = typeof o.toolChoice === 'string' ? o.toolChoice : o.toolChoice?.name;
  }
  if (o.parallelToolCalls !== undefined) out.parallelToolCalls = o.parallelToolCalls;
  if (o.reasoning !== undefined) out.reasoning = o.reasoning;
  if (Array.isArray(o.history)) out.history = o.history.map(nativeMessage);
  if (o.images !== undefined) out.images = nativeMedia(o.images, 'images');
  if (o.audio !== undefined) out.audio = nativeMedia(o.audio, 'audio');
  return out;
}

// Media as file paths or bytes: a Uint8Array as it is, an ArrayBuffer viewed as one (HarmonyOS
// has no Buffer; a Node Buffer is a Uint8Array already).
function nativeMedia(list, what) {
  if (!Array.isArray(list)) throw new TypeError(`${what} must be an array of paths or Uint8Arrays`);
  return list.map((m) => (m instanceof ArrayBuffer ? new Uint8Array(m) : m));
}

// Tools as {name, description, parameters} or OpenAI's {type: 'function', function: {...}};
// the addon takes the parameters' schema as JSON text.
function nativeTools(tools) {
  if (!Array.isArray(tools)) throw new TypeError('tools must be an array');
  return tools.map((t) => {
    const f = t && t.type === 'function' && t.function ? t.function : t;
    if (!f || typeof f.name !== 'string') throw new TypeError('each tool needs a string name');
    const p = f.parameters ?? { type: 'object', properties: {} };
    return { name: f.name, description: f.description ?? '',
             parameters: typeof p === 'string' ? p : JSON.stringify(p) };
  });
}

// A history message with its tool fields: toolCalls' arguments as JSON text, content null
// (an assistant that only called tools) as ''.
function nativeMessage(m) {
  if (!m || typeof m !== 'object') return m;
  const out = { ...m, content: m.content ?? '' };
  if (Array.isArray(m.toolCalls)) {
    out.toolCalls = m.toolCalls.map((c) => ({
      id: c.id ?? '', name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? c.args ?? {}),
    }));
  }
  return out;
}

const { Conversation, autosavedConversations } = require('./conversation.js');
const { textStream } = require('./stream.js');
const { createRuntimeClass } = require('./runtime.js');
const { createRetrieval } = require('./retrieval.js');

/** A LoRA adapter loaded by model.loadLora(). */
class LoraAdapter {
  constructor(model, info) {
    this.model = model;
    this.id = info.id;
    this.path = info.path;
    this.info = Object.freeze({ arch: info.arch, rank: info.rank, alpha: info.alpha,
                                nPairs: info.nPairs, fileBytes: info.fileBytes,
                                loadMs: info.loadMs });
  }
}

class Model {
  #native;
  #queue = [];        // requests not started yet, in call order
  #running = null;    // the request the worker is on
  #disposed = false;
  #disposing = null;  // the dispose() promise
  #info;
  #ref;

  constructor(nativeModel, info) {
    if (!(nativeModel instanceof native.NativeModel)) {
      throw new TypeError('use Model.load(path, options) to create a Model');
    }
    this.#native = nativeModel;
    this.#info = Object.freeze(info);
    this.#ref = new WeakRef(this);
    liveRefs.add(this.#ref);
  }

  static async load(modelPath, options = {}) {
    if (typeof modelPath !== 'string') throw new TypeError('path must be a string');
    const { signal, onProgress } = options;
    if (signal?.aborted) throw abortError(signal);
    const nm = new native.NativeModel();
    liveModels++;
    const onAbort = () => nm.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    let info;
    try {
      info = await nm.load(modelPath, {
        threads: options.threads, ctx: options.ctx, batch: options.batch,
        loadMode: options.loadMode, warmup: options.warmup,
        mmprojPath: options.mmprojPath, imageMaxTokens: options.imageMaxTokens,
        draftPath: options.draftPath,
      }, onProgress ? (p) => { try { onProgress(p); } catch { /* the caller's problem */ } }
                    : undefined);
    } catch (err) {
      await nm.dispose();
      liveModels--;
      if (signal?.aborted) throw abortError(signal);
      throw err;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (onProgress) {
      try { onProgress({ stage: 'ready', progress: 1 }); } catch { /* ignored */ }
    }
    return new Model(nm, info);
  }

  get info() { return this.#info; }
  get busy() { return this.#running !== null || this.#queue.length > 0; }
  get disposed() { return this.#disposed; }

  generate(prompt, options = {}) {
    if (this.#disposed) return Promise.reject(disposedError());
    if (typeof prompt !== 'string') return Promise.reject(new TypeError('prompt must be a string'));
    if (options.index) {
      // A grounded answer: the index's best chunks go before the prompt; `sources` lists them.
      return grounded(options, prompt, (p, o) => this.generate(p, o));
    }
    return this.#enqueue(options, (onBatch) =>
      this.#native.generate(prompt, nativeGenerateOptions(options), onBatch));
  }

  /** A conversation on this model (see conversation.js); `ready` settles once it exists. */
  conversation(options = {}) {
    if (this.#disposed) throw disposedError();
    return Conversation.create(this.#bridge(), options);
  }

  /** A conversation saved with conversation.save(path), with its KV cache when it still fits
   * this model and session. */
  restoreConversation(filePath, options = {}) {
    if (this.#disposed) return Promise.reject(disposedError());
    if (typeof filePath !== 'string') return Promise.reject(new TypeError('path must be a string'));
    return Conversation.restore(this.#bridge(), filePath, options);
  }

  // What a Conversation may do with this model: queue generations and jobs in the model's
  // order, and reach the native object.
  #bridge() {
    return {
      native: this.#native,
      generate: (options, start) => {
        if (this.#disposed) return Promise.reject(disposedError());
        return this.#enqueue(options, start);
      },
      job: (start) => {
        if (this.#disposed) return Promise.reject(disposedError());
        return this.#enqueue({}, start, /*job=*/true);
      },
      disposed: () => this.#disposed,
      nativeGenerateOptions,
      grounded,
      isIndex: (x) => x instanceof DocumentIndex,
    };
  }

  // Queues a request; `start(onBatch)` starts it on the native side and returns its promise.
  // Generations resolve "cancelled" when aborted or disposed before they end; jobs reject.
  #enqueue(options, start, job = false) {
    return new Promise((resolve, reject) => {
      const req = { options, start, job, resolve, reject, settled: false, t0: performance.now(),
                    error: null };
      req.settle = (fn, value) => {
        if (req.settled) return;
        req.settled = true;
        req.signal?.removeEventListener('abort', req.onAbort);
        fn(value);
      };
      const { signal } = options;
      if (signal && !job) {
        if (signal.aborted) {
          req.settle(resolve, { text: '', finishReason: 'cancelled', stats: emptyStats(0) });
          return;
        }
        req.signal = signal;
        req.onAbort = () => this.#cancel(req);
        signal.addEventListener('abort', req.onAbort, { once: true });
      }
      this.#queue.push(req);
      this.#pump();
    });
  }

  stream(prompt, options = {}) {
    return textStream((o) => this.generate(prompt, o), options);
  }

  releaseKv() {
    if (this.#disposed) return Promise.reject(disposedError());
    return this.#native.releaseKv();
  }

  /** Loads a LoRA adapter file (GGUF, convert_lora_to_gguf.py's format) against this model.
   * It is not applied until setLora(). */
  async loadLora(filePath) {
    if (this.#disposed) throw disposedError();
    if (typeof filePath !== 'string') throw new TypeError('path must be a string');
    const info = await this.#enqueue({}, () => this.#native.loraLoad(filePath), true);
    return Object.freeze(new LoraAdapter(this, info));
  }

  /** Applies `adapter` at `scale` (default 1; 0 removes it) from the next generation on. */
  setLora(adapter, scale = 1) {
    if (this.#disposed) return Promise.reject(disposedError());
    if (typeof scale !== 'number') return Promise.reject(new TypeError('scale must be a number'));
    let id;
    try { id = this.#loraId(adapter); } catch (err) { return Promise.reject(err); }
    return this.#enqueue({}, () => this.#native.loraSet(id, scale), true);
  }

  /** Un-applies `adapter` and frees it (it cannot be applied again). */
  removeLora(adapter) {
    if (this.#disposed) return Promise.reject(disposedError());
    let id;
    try { id = this.#loraId(adapter); } catch (err) { return Promise.reject(err); }
    return this.#enqueue({}, () => this.#native.loraRemove(id), true);
  }

  /** Un-applies every adapter: the next generation is the base model's exactly. */
  clearLora() {
    if (this.#disposed) return Promise.reject(disposedError());
    return this.#enqueue({}, () => this.#native.loraClear(), true);
  }

  #loraId(adapter) {
    if (!(adapter instanceof LoraAdapter) || adapter.model !== this) {
      throw new TypeError('adapter must come from this model\'s loadLora()');
    }
    return adapter.id;
  }

  /** Cancels the generation running and every generation queued (they resolve "cancelled"
   * with the text so far); queued jobs (saves, edits) still run. Resolves once the running
   * request has settled. */
  cancelAll() {
    const now = performance.now();
    const generations = this.#queue.filter((r) => !r.job);
    this.#queue = this.#queue.filter((r) => r.job);
    for (const req of generations) {
      req.settle(req.resolve, { text: '', finishReason: 'cancelled', stats: emptyStats(now - req.t0) });
    }
    const running = this.#running;
    if (!running) return Promise.resolve();
    if (!running.job) this.#native.cancel();
    return running.done.then(() => {}, () => {});
  }

  dispose() {
    if (this.#disposing) return this.#disposing;
    this.#disposed = true;
    const queued = this.#queue.splice(0);
    for (const req of queued) {
      if (req.job) {
        req.settle(req.reject, disposedError());
      } else {
        req.settle(req.resolve, {
          text: '', finishReason: 'cancelled', stats: emptyStats(performance.now() - req.t0),
        });
      }
    }
    const running = this.#running;
    this.#native.cancel();
    this.#disposing = (async () => {
      if (running) await running.done;
      await this.#native.dispose();
      liveModels--;
      liveRefs.delete(this.#ref);
    })();
    return this.#disposing;
  }

  #cancel(req) {
    const i = this.#queue.indexOf(req);
    if (i >= 0) {
      this.#queue.splice(i, 1);
      req.settle(req.resolve, {
        text: '', finishReason: 'cancelled', stats: emptyStats(performance.now() - req.t0),
      });
    } else if (this.#running === req) {
      this.#native.cancel();
    }
  }

  #pump() {
    if (this.#running || this.#queue.length === 0 || this.#disposed) return;
    const req = this.#queue.shift();
    const started = performance.now();
    this.#running = req;
    const { onToken, onReasoning } = req.options;
    const onBatch = onToken || onReasoning ? (text, info) => {
      if (req.settled || this.#disposed) return;  // nothing after settle or dispose
      try {
        if (info.reasoning) onReasoning?.(text, info);
        else onToken?.(text, info);
      } catch (err) {
        req.error = err;
        this.#native.cancel();
      }
    } : undefined;
    let p;
    try {
      p = req.start(onBatch);
    } catch (err) {  // bad options: a TypeError from the addon
      this.#running = null;
      req.settle(req.reject, err);
      this.#pump();
      return;
    }
    req.done = p.then(
      (res) => {
        if (res && res.stats) res.stats.queuedMs += started - req.t0;  // here + the native queue
        if (req.error) req.settle(req.reject, req.error);
        else req.settle(req.resolve, res);
      },
      (err) => req.settle(req.reject, err),
    ).finally(() => {
      this.#running = null;
      this.#pump();
    });
  }
}

const retrieval = createRetrieval(native, {
  abortError,
  // Live embedders and indexes run native threads too: the exit hook must stop them.
  retain: () => { liveModels++; }, release: () => { liveModels--; },
});
const Embedder = retrieval.Embedder;
const DocumentIndex = retrieval.DocumentIndex;
const cosineSimilarity = retrieval.cosineSimilarity;

// Runs `run(prompt, options)` with `text` grounded in options.index (retrieval options in
// options.retrieval) and adds the chunks the prompt cites as `sources`.
async function grounded(options, text, run) {
  if (!(options.index instanceof DocumentIndex)) {
    throw new TypeError('index must be a DocumentIndex from openIndex()');
  }
  const g = await options.index.ground(text, options.retrieval ?? {});
  const res = await run(g.prompt, { ...options, index: undefined, retrieval: undefined });
  res.sources = g.cited;
  return res;
}

// The seed's contract (first field report, §3.2).
function InitModel(modelPath, threads, ctx) {
  return Model.load(modelPath, { threads, ctx });
}

async function Generate(handle, prompt, maxTokens, temperature) {
  if (!(handle instanceof Model)) throw new TypeError('handle must come from InitModel()');
  const r = await handle.generate(prompt, { maxTokens, temperature });
  return r.text;
}

function pull(manifestUrl, options = {}) {
  if (!options || typeof options.store !== 'string') {
    return Promise.reject(new TypeError('options.store (the model store folder) is required'));
  }
  const { signal, onProgress } = options;
  if (signal?.aborted) return Promise.reject(abortError(signal));
  const handle = {};
  const p = native.pull(manifestUrl, options.store,
                        onProgress ? (x) => { try { onProgress(x); } catch { /* ignored */ } }
                                   : undefined,
                        handle);
  const onAbort = () => handle.cancel?.();
  signal?.addEventListener('abort', onAbort, { once: true });
  return p.then(
    (m) => { signal?.removeEventListener('abort', onAbort); return m; },
    (err) => {
      signal?.removeEventListener('abort', onAbort);
      throw signal?.aborted ? abortError(signal) : err;
    });
}

const Runtime = createRuntimeClass(native, {
  nativeGenerateOptions, emptyStats,
  // A live runtime holds a model too: the exit hook must stop it like a Model.
  retain: () => { liveModels++; }, release: () => { liveModels--; },
});

// A bad argument rejects the promise like every other failure, instead of throwing.
function settle(start) {
  try {
    return start();
  } catch (err) {
    return Promise.reject(err);
  }
}

// ---- the app's signals (docs/node.md "Platform signals") ----

// Models not yet disposed, weakly: a model the app dropped is still freed by GC.
const liveRefs = new Set();
function liveModelList() {
  const out = [];
  for (const r of liveRefs) {
    const m = r.deref();
    if (m && !m.disposed) out.push(m); else liveRefs.delete(r);
  }
  return out;
}

let logSubscription = null;

/** Library and llama.cpp log lines, batched to `callback` on the JS thread. One sink at a time:
 * a new onLog() replaces the previous one. After dispose() the callback is never called. */
function onLog(callback, options = {}) {
  if (typeof callback !== 'function') throw new TypeError('callback must be a function');
  const level = options.level === undefined ? 'info' : options.level;
  if (typeof level !== 'string') throw new TypeError('options.level must be a string');
  const previous = logSubscription;
  let active = true;
  native.setLogSink((lines) => {
    if (!active) return;
    try { callback(lines); } catch { /* the app's problem; never into the addon */ }
  }, level);
  if (previous) previous.detach();
  const sub = {
    get active() { return active; },
    detach() { active = false; },
    dispose() {
      if (!active) return;
      active = false;
      if (logSubscription === sub) {
        logSubscription = null;
        native.setLogSink(undefined);
      }
    },
  };
  logSubscription = sub;
  return { get active() { return sub.active; }, dispose: () => sub.dispose() };
}

/** The app went to the background (HarmonyOS onBackground, Android onStop): cancels every
 * generation (running and queued: they resolve "cancelled" with their text so far), saves every
 * conversation that has a savePath, then frees the KV caches (releaseKv: false keeps them). */
async function enterBackground(options = {}) {
  const releaseKv = options.releaseKv === undefined ? true : options.releaseKv;
  if (typeof releaseKv !== 'boolean') throw new TypeError('options.releaseKv must be a boolean');
  const models = liveModelList();
  const cancelled = models.filter((m) => m.busy).length;
  await Promise.all(models.map((m) => m.cancelAll()));
  const saved = [];
  const failed = [];
  for (const c of autosavedConversations()) {
    try {
      await c.save(c.savePath);
      saved.push(c.savePath);
    } catch (err) {
      failed.push({ path: c.savePath, code: err.code || 'ERR_INTERNAL', message: err.message });
    }
  }
  if (releaseKv) await Promise.all(models.map((m) => m.releaseKv().catch(() => {})));
  return { models: models.length, cancelled, saved, failed };
}

module.exports = {
  Model,
  Conversation,
  LoraAdapter,
  Runtime,
  Embedder,
  DocumentIndex,
  loadEmbedder: (modelPath, options) => Embedder.load(modelPath, options),
  openIndex: (dir, embedder, options) => DocumentIndex.open(dir, embedder, options),
  cosineSimilarity,
  InitModel,
  Generate,
  deviceProfile: (options) => native.deviceProfile(options),
  planMemory: (modelPath, options) => native.planMemory(modelPath, options),
  pull,
  listModels: (store) => native.listModels(store),
  ensureModel: (store, id, version) => settle(() => native.ensureModel(store, id, version)),
  verifyModel: (store, id, version) => settle(() => native.verifyModel(store, id, version)),
  removeModel: (store, id, version) => settle(() => native.removeModel(store, id, version)),
  memoryUsage: () => native.memoryUsage(),
  setThermalLevel: (level) => native.setThermalLevel(level),
  setMemoryLevel: (level) => native.setMemoryLevel(level),
  pause: () => native.pause(),
  resume: () => native.resume(),
  signals: () => native.signals(),
  onLog,
  enterBackground,
  version: native.version,
};

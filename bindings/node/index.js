'use strict';
// edgellm for Node.js: the thin JS layer over edgellm.node. Types and contracts: index.d.ts;
// design: docs/node.md. Queueing, AbortSignal and the "settles exactly once, nothing after"
// guarantees live here; everything heavy runs on the addon's worker thread per model.

const path = require('node:path');
const fs = require('node:fs');

function loadAddon() {
  const candidates = [
    process.env.EDGELLM_NODE_ADDON,
    path.join(__dirname, 'build', 'edgellm.node'),
    path.join(__dirname, 'prebuilds', `${process.platform}-${process.arch}`, 'edgellm.node'),
  ].filter(Boolean);
  for (const file of candidates) {
    if (fs.existsSync(file)) return require(file);
  }
  const err = new Error(
    `edgellm: the native addon is not built (looked for ${candidates.join(', ')}): ` +
      'run scripts/setup.sh (or cmake --build build --target edgellm_node) at the repository root');
  err.code = 'ERR_EDGELLM_ADDON_MISSING';
  throw err;
}

const native = loadAddon();

// Models not yet disposed. On process exit (process.exit() runs no environment cleanup) the
// addon cancels their generations and frees them before the process tears down.
let liveModels = 0;
process.once('exit', () => { if (liveModels > 0) native.shutdown(); });

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
    peakRssBytes: native.memoryUsage().peakRssBytes, threads: 0, ctx: 0, batches: 0,
    deliveryP50Us: 0, deliveryP99Us: 0, queuedMs,
  };
}

function nativeGenerateOptions(o) {
  const out = {};
  for (const k of ['maxTokens', 'temperature', 'topK', 'topP', 'minP', 'repeatPenalty', 'seed',
                   'chat', 'systemPrompt', 'history', 'reusePrefix', 'stop', 'batchTokens',
                   'batchMs', 'ignoreEos']) {
    if (o[k] !== undefined) out[k] = o[k];
  }
  return out;
}

const { Conversation } = require('./conversation.js');
const { textStream } = require('./stream.js');

class Model {
  #native;
  #queue = [];        // requests not started yet, in call order
  #running = null;    // the request the worker is on
  #disposed = false;
  #disposing = null;  // the dispose() promise
  #info;

  constructor(nativeModel, info) {
    if (!(nativeModel instanceof native.NativeModel)) {
      throw new TypeError('use Model.load(path, options) to create a Model');
    }
    this.#native = nativeModel;
    this.#info = Object.freeze(info);
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
    const { onToken } = req.options;
    const onBatch = onToken ? (text, info) => {
      if (req.settled || this.#disposed) return;  // nothing after settle or dispose
      try {
        onToken(text, info);
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

module.exports = {
  Model,
  Conversation,
  InitModel,
  Generate,
  deviceProfile: (options) => native.deviceProfile(options),
  planMemory: (modelPath, options) => native.planMemory(modelPath, options),
  pull,
  listModels: (store) => native.listModels(store),
  memoryUsage: () => native.memoryUsage(),
  version: native.version,
};

// The demo's state: the one loaded model and its conversation (saved after every turn, so a
// reloaded page or a restarted server resumes it), the staged load (pull, engine, warm-up)
// broadcast to every progress listener, and the one running reply with its AbortController.
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Docs, sourceView } from './docs.mjs';
import { HttpError, sendError, sseSend, sseStart } from './http.mjs';

const kMaxPrompt = 16 * 1024;  // characters
const kMaxTokens = 8192;
// edgellm's own trained model (docs/training.md): the picker's first, default choice.
const kBundled = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
                              '../../assets/edgellm-tiny-F32.gguf');

// The addon's errors may carry a code (e.g. ERR_DISPOSED); keep it in the message.
function describe(err) {
  return err?.code ? `${err.message} (${err.code})` : String(err?.message ?? err);
}

export class Demo {
  constructor(addon, { modelsDir, store, threads, embeddingModel }) {
    this.addon = addon;
    this.docs = new Docs(addon, { embeddingModel, store, threads });
    this.modelsDir = modelsDir;
    this.store = store;
    this.threads = threads;
    this.model = null;      // the loaded Model
    this.conv = null;       // its Conversation
    this.convFile = path.join(store, 'demo-conversation.kv');
    this.restored = null;   // what restoring the saved conversation gave, for the page
    this.replyStats = [];   // the stats of each assistant message of the history (null: unknown)
    this.loading = null;    // { target } while a pull or load runs
    this.gen = null;        // { controller } while a generation runs
    this.listeners = new Set();
    this.lastStage = null;  // replayed to a listener that connects mid-load
  }

  // GET /api/models: the .gguf files of --models and the versions installed in --store.
  async models() {
    const models = [];
    const errors = [];
    const bundled = await stat(kBundled).catch(() => null);
    if (bundled?.isFile()) {
      models.push({ source: 'bundled', id: 'edgellm-tiny (trained, bilingual)', path: kBundled,
                    sizeBytes: bundled.size });
    }
    try {
      for (const name of (await readdir(this.modelsDir)).sort()) {
        if (!name.endsWith('.gguf')) continue;
        const file = path.join(this.modelsDir, name);
        const st = await stat(file).catch(() => null);
        if (st?.isFile()) models.push({ source: 'file', id: name, path: file, sizeBytes: st.size });
      }
    } catch (err) {
      errors.push(`cannot list --models ${this.modelsDir}: ${err.message}`);
    }
    try {
      for (const m of await this.addon.listModels(this.store)) {
        models.push({ source: 'store', id: `${m.id}@${m.version}`, path: m.path,
                      sizeBytes: m.sizeBytes, quant: m.quant, active: m.active });
      }
    } catch (err) {
      errors.push(`cannot list the store ${this.store}: ${describe(err)}`);
    }
    return { models, errors, modelsDir: this.modelsDir, store: this.store };
  }

  async requireListed(file) {
    if (typeof file !== 'string' || file === '') {
      throw new HttpError(400, 'missing "path": pick a model from GET /api/models');
    }
    const { models } = await this.models();
    if (!models.some((m) => m.path === file)) {
      throw new HttpError(404, `no model ${file} in ${this.modelsDir} or the store ` +
                               `${this.store}: pick one from GET /api/models or pull one ` +
                               'from a manifest URL');
    }
  }

  async plan(file) {
    await this.requireListed(file);
    try {
      return await this.addon.planMemory(file);
    } catch (err) {
      throw new HttpError(422, `cannot plan ${file}: ${describe(err)}`);
    }
  }

  status() {
    const { rssBytes, peakRssBytes } = this.addon.memoryUsage();
    const info = this.model?.info;
    return {
      rssBytes, peakRssBytes,
      threads: info?.threads ?? 0,
      busy: this.model?.busy ?? false,
      generating: this.gen !== null,
      loading: this.loading?.target ?? null,
      model: info ? { name: info.name, path: info.path, quant: info.quant, ctx: info.ctx,
                      threads: info.threads, loadMs: info.loadMs, warmupMs: info.warmupMs,
                      loadMode: info.loadMode } : null,
    };
  }

  refuseWhileLoading() {
    if (this.loading) {
      throw new HttpError(409, `${this.loading.target} is loading: wait for "ready"`);
    }
  }

  // GET /api/events: the load stages, as SSE, to every page that listens.
  listen(res) {
    sseStart(res);
    if (this.lastStage) sseSend(res, 'stage', this.lastStage);
    this.listeners.add(res);
    res.on('close', () => this.listeners.delete(res));
  }

  emit(stage) {
    this.lastStage = { ...stage, at: Date.now() };
    for (const res of this.listeners) sseSend(res, 'stage', this.lastStage);
  }

  // POST /api/load {path} | {manifestUrl}: pull (when a URL), dispose the old model, load.
  async load(body) {
    this.refuseWhileLoading();
    const { path: file, manifestUrl } = body;
    this.loading = { target: manifestUrl ?? file };  // before any await: one load at a time
    try {
      if (manifestUrl === undefined) await this.requireListed(file);
      else checkUrl(manifestUrl);
    } catch (err) {
      this.loading = null;
      throw err;
    }
    try {
      const target = manifestUrl === undefined ? file : await this.pull(manifestUrl);
      await this.unload();
      const model = await this.loadEngine(target);
      this.model = model;
      this.conv = await this.openConversation(model);
      this.emit({ stage: 'ready', model: model.info.name, path: target });
      return { info: model.info };
    } catch (err) {
      this.emit({ stage: 'error', message: err.message });
      throw err;
    } finally {
      this.loading = null;
    }
  }

  async pull(url) {
    let last = '';
    const onProgress = (p) => {
      const pct = Math.floor(p.percent);
      const key = `${p.stage} ${pct}`;
      if (key === last) return;  // one event per whole percent and step
      last = key;
      this.emit({ stage: 'download', step: p.stage, percent: p.percent, bytesDone: p.bytesDone,
                  bytesTotal: p.bytesTotal, bytesPerSecond: p.bytesPerSecond,
                  etaSeconds: p.etaSeconds, url });
    };
    this.emit({ stage: 'download', step: 'manifest', percent: 0, etaSeconds: -1, url });
    try {
      const installed = await this.addon.pull(url, { store: this.store, onProgress });
      return installed.path;
    } catch (err) {
      throw new HttpError(502, `cannot pull ${url}: ${describe(err)}`);
    }
  }

  async loadEngine(file) {
    let last = -1;
    const onProgress = (p) => {
      if (p.stage === 'loading') {
        const pct = Math.floor(p.progress * 100);
        if (pct === last) return;
        last = pct;
        this.emit({ stage: 'initializing engine', percent: p.progress * 100, path: file });
      } else if (p.stage === 'warming up') {
        this.emit({ stage: 'warming up', path: file });
      }  // "ready" is announced once load() resolves, with the model's info.
    };
    this.emit({ stage: 'initializing engine', percent: 0, path: file });
    const options = { onProgress };
    if (this.threads) options.threads = this.threads;
    try {
      return await this.addon.Model.load(file, options);
    } catch (err) {
      throw new HttpError(422, `cannot load ${file}: ${describe(err)}`);
    }
  }

  // The saved conversation when there is one (its KV cache too when it was made with this
  // model), else a new one.
  async openConversation(model) {
    this.restored = null;
    this.replyStats = [];
    if (existsSync(this.convFile)) {
      try {
        const conv = await model.restoreConversation(this.convFile);
        this.restored = conv.restoreInfo;
        this.replyStats = conv.history.filter((m) => m.role === 'assistant').map(() => null);
        return conv;
      } catch (err) {
        this.restored = { kvRestored: false, nTokens: 0, whyNot: describe(err) };
      }
    }
    return model.conversation();
  }

  async save() {
    try {
      await this.conv?.save(this.convFile);
    } catch (err) {
      console.error(`edgellm-demo: the conversation was not saved: ${describe(err)}`);
    }
  }

  // GET /api/conversation: the history, and what restoring it gave.
  conversation() {
    return { history: this.conv?.history ?? [], replyStats: this.replyStats,
             restored: this.restored };
  }

  // POST /api/reset: a new conversation (the saved one goes too).
  async reset() {
    if (this.gen) throw new HttpError(409, 'a reply is being generated: wait for it or cancel it');
    if (!this.conv) throw new HttpError(409, 'no model is loaded: pick one and press Load first');
    await this.conv.reset();
    this.replyStats = [];
    this.restored = null;
    await this.save();
    return this.conversation();
  }

  async unload() {
    const old = this.model;
    this.model = null;
    this.conv = null;
    if (old) await old.dispose();  // cancels a running generation, frees the memory
  }

  // POST /api/chat {prompt, maxTokens?, temperature?}: the next turn of the conversation,
  // batches as SSE "token", then "done" with the stats and the history.
  async chat(res, body) {
    const { prompt, maxTokens = 256, temperature, docs } = body;
    if (typeof prompt !== 'string' || prompt.trim() === '' || prompt.length > kMaxPrompt) {
      throw new HttpError(400, `"prompt" must be a non-empty string of at most ${kMaxPrompt} ` +
                               'characters');
    }
    if (!Number.isInteger(maxTokens) || maxTokens < 1 || maxTokens > kMaxTokens) {
      throw new HttpError(400, `"maxTokens" must be an integer in 1..${kMaxTokens}`);
    }
    if (temperature !== undefined && !(typeof temperature === 'number' && temperature >= 0)) {
      throw new HttpError(400, '"temperature" must be a number >= 0 (0 = greedy)');
    }
    this.refuseWhileLoading();
    const model = this.model;
    if (!model) throw new HttpError(409, 'no model is loaded: pick one and press Load first');
    if (this.gen) throw new HttpError(409, 'a generation is running: wait for it or cancel it');
    const grounded = await this.docs.sendOptions(docs, model.info.ctx);  // {} or {index, retrieval}

    const controller = new AbortController();
    this.gen = { controller };
    res.on('close', () => { if (!res.writableEnded) controller.abort(); });  // page went away
    let first = 0;
    let firstTotal = 0;
    const onToken = (text, batch) => {
      const now = performance.now();
      if (batch.index === 0) {
        first = now;
        firstTotal = batch.totalTokens;
      }
      // Default batching (about 4 tokens per crossing); BatchInfo counts the tokens, so the
      // live ms/token is the time per token since the first batch arrived.
      const done = batch.totalTokens - firstTotal;
      const msPerToken = done > 0 ? (now - first) / done : null;
      sseSend(res, 'token', { text, index: batch.index, latencyUs: batch.latencyUs,
                              tokens: batch.totalTokens, msPerToken });
    };
    const options = { maxTokens, signal: controller.signal, onToken, ...grounded };
    if (temperature !== undefined) options.temperature = temperature;
    try {
      const conv = this.conv;
      const { text, finishReason, stats, sources } = await conv.send(prompt, options);
      if (this.conv === conv) {
        this.replyStats.splice(0, stats.turnsDropped);  // their replies left the history
        if (conv.history.at(-1)?.role === 'assistant' && finishReason !== 'context_full') {
          this.replyStats.push(stats);
        }
        await this.save();
      }
      const msPerToken = stats.decodeTps > 0 ? 1000 / stats.decodeTps : null;
      sseSend(res, 'done', { finishReason, chars: text.length, msPerToken, stats,
                             sources: sources?.map(sourceView),
                             history: conv.history,
                             replyStats: this.conv === conv ? this.replyStats : [] });
      res.end();
    } catch (err) {
      sendError(res, new HttpError(500, `generation failed: ${describe(err)}`));
    } finally {
      this.gen = null;
    }
  }

  // POST /api/cancel: aborts the running generation (it ends with finishReason "cancelled").
  cancel() {
    if (!this.gen) return { cancelled: false, message: 'nothing is generating' };
    this.gen.controller.abort();
    return { cancelled: true };
  }

  async close() {
    for (const res of this.listeners) res.end();
    this.gen?.controller.abort();
    await this.unload();
    await this.docs.close();
  }
}

function checkUrl(url) {
  let u;
  try { u = new URL(url); } catch { u = null; }
  if (!u || !['http:', 'https:', 'file:'].includes(u.protocol)) {
    throw new HttpError(400, `"manifestUrl" ${JSON.stringify(url)} is not an http(s) or file URL ` +
                             'of a manifest.json (e.g. http://127.0.0.1:8081/manifest.json)');
  }
}

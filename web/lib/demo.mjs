// The demo's state: the one loaded model (with its projector, when one was picked) and its
// conversation (saved after every turn, so a reloaded page or a restarted server resumes it),
// the staged load (pull, engine, warm-up) broadcast to every progress listener, and the one
// running reply with its AbortController.
import { existsSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Docs, sourceView } from './docs.mjs';
import { HttpError, sendError, sseSend, sseStart } from './http.mjs';

const kMaxPrompt = 16 * 1024;  // characters
const kMaxTokens = 8192;
// One attached image or audio clip per turn, sent as base64 in the chat request's JSON.
export const kMaxMediaBytes = 16 * 1024 * 1024;
export const kMaxChatBody = Math.ceil(kMaxMediaBytes / 3) * 4 + 256 * 1024;
const kMaxMediaItems = 4;
// edgellm's own trained model (docs/training.md): the picker's first, default choice.
const kBundled = path.resolve(path.dirname(fileURLToPath(import.meta.url)),
                              '../../assets/edgellm-tiny-F32.gguf');

// The addon's errors may carry a code (e.g. ERR_DISPOSED); keep it in the message.
function describe(err) {
  return err?.code ? `${err.message} (${err.code})` : String(err?.message ?? err);
}

export class Demo {
  constructor(addon, { modelsDir, modelsDirGiven, store, threads, mmproj, imageMaxTokens,
                       embeddingModel }) {
    this.addon = addon;
    this.docs = new Docs(addon, { embeddingModel, store, threads });
    this.modelsDir = modelsDir;
    this.modelsDirGiven = modelsDirGiven;
    this.mmproj = mmproj;                  // --mmproj: the default projector ('' for none)
    this.imageMaxTokens = imageMaxTokens;  // 0: the projector's own limit
    this.store = store;
    this.threads = threads;
    this.model = null;      // the loaded Model
    this.conv = null;       // its Conversation
    this.convFile = path.join(store, 'demo-conversation.kv');
    this.restored = null;   // what restoring the saved conversation gave, for the page
    this.replyStats = [];   // the stats of each assistant message of the history (null: unknown)
    this.mediaKinds = new Set();  // what this conversation's turns attached: image, audio
    this.loading = null;    // { target } while a pull or load runs
    this.gen = null;        // { controller } while a generation runs
    this.listeners = new Set();
    this.lastStage = null;  // replayed to a listener that connects mid-load
  }

  // GET /api/models: the .gguf files of --models and the versions installed in --store, and the
  // projectors (--mmproj, and the files of --models whose name contains "mmproj").
  async models() {
    const models = [];
    const projectors = [];
    const errors = [];
    const notes = [];
    if (this.mmproj) {
      const st = await stat(this.mmproj).catch(() => null);
      if (st?.isFile()) {
        projectors.push({ source: 'option', id: path.basename(this.mmproj), path: this.mmproj,
                          sizeBytes: st.size });
      } else {
        errors.push(`--mmproj ${this.mmproj} is gone`);
      }
    }
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
        if (!st?.isFile()) continue;
        const entry = { source: 'file', id: name, path: file, sizeBytes: st.size };
        if (!/mmproj/i.test(name)) models.push(entry);
        else if (file !== this.mmproj) projectors.push(entry);
      }
    } catch (err) {
      if (err.code === 'ENOENT' && !this.modelsDirGiven) {
        // The default folder is optional: no error, just how to offer more models.
        notes.push(`no models/ folder (${this.modelsDir}): put .gguf files there or start the ` +
                   'server with --models DIR to offer more models');
      } else {
        errors.push(`cannot list --models ${this.modelsDir}: ${err.message}`);
      }
    }
    try {
      for (const m of await this.addon.listModels(this.store)) {
        models.push({ source: 'store', id: `${m.id}@${m.version}`, path: m.path,
                      sizeBytes: m.sizeBytes, quant: m.quant, active: m.active });
      }
    } catch (err) {
      errors.push(`cannot list the store ${this.store}: ${describe(err)}`);
    }
    return { models, projectors, defaultProjector: this.mmproj, errors, notes,
             modelsDir: this.modelsDir, store: this.store };
  }

  // A load's projector: undefined = --mmproj's (or none), '' or null = none, else a listed one.
  async requireProjector(file) {
    if (file === undefined) return this.mmproj;
    if (file === null || file === '') return '';
    if (typeof file !== 'string') {
      throw new HttpError(400, '"mmprojPath" must be a projector\'s path from GET /api/models ' +
                               '(or "" for none)');
    }
    const { projectors } = await this.models();
    if (!projectors.some((p) => p.path === file)) {
      throw new HttpError(404, `no projector ${file}: pick one from GET /api/models (--mmproj, ` +
                               `or a file in ${this.modelsDir} whose name contains "mmproj")`);
    }
    return file;
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
                      loadMode: info.loadMode, vision: info.vision, audio: info.audio,
                      mmprojPath: info.mmprojPath ?? '' } : null,
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

  // POST /api/load {path | manifestUrl, mmprojPath?}: pull (when a URL), dispose the old model,
  // load (with the projector when one is given, else --mmproj's when there is one).
  async load(body) {
    this.refuseWhileLoading();
    const { path: file, manifestUrl } = body;
    this.loading = { target: manifestUrl ?? file };  // before any await: one load at a time
    let mmproj;
    try {
      if (manifestUrl === undefined) await this.requireListed(file);
      else checkUrl(manifestUrl);
      mmproj = await this.requireProjector(body.mmprojPath);
    } catch (err) {
      this.loading = null;
      throw err;
    }
    try {
      const target = manifestUrl === undefined ? file : await this.pull(manifestUrl);
      await this.unload();
      const model = await this.loadEngine(target, mmproj);
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

  async loadEngine(file, mmproj) {
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
    if (mmproj) {
      options.mmprojPath = mmproj;
      if (this.imageMaxTokens) options.imageMaxTokens = this.imageMaxTokens;
    }
    try {
      return await this.addon.Model.load(file, options);
    } catch (err) {
      const withProjector = mmproj ? ` with the projector ${path.basename(mmproj)}` : '';
      throw new HttpError(422, `cannot load ${file}${withProjector}: ${describe(err)}`);
    }
  }

  // The saved conversation when there is one (its KV cache too when it was made with this
  // model), else a new one.
  async openConversation(model) {
    this.restored = null;
    this.replyStats = [];
    this.mediaKinds.clear();
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
    this.mediaKinds.clear();
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

  // POST /api/chat {prompt, maxTokens?, temperature?, ignoreEos?, docs?, media?}: the next turn
  // of the conversation (media: [{name, type, data}], an image or audio clip as base64),
  // batches as SSE "token", then "done" with the stats and the history.
  async chat(res, body) {
    const { prompt, maxTokens = 256, temperature, ignoreEos, docs } = body;
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
    if (ignoreEos !== undefined && typeof ignoreEos !== 'boolean') {
      throw new HttpError(400, '"ignoreEos" must be true or false');
    }
    const media = readMedia(body.media);
    this.refuseWhileLoading();
    const model = this.model;
    if (!model) throw new HttpError(409, 'no model is loaded: pick one and press Load first');
    if (this.gen) throw new HttpError(409, 'a generation is running: wait for it or cancel it');
    checkMediaFits(media, model.info);
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
    if (ignoreEos) options.ignoreEos = true;
    const images = media.filter((m) => m.kind === 'image').map((m) => m.bytes);
    const audio = media.filter((m) => m.kind === 'audio').map((m) => m.bytes);
    if (images.length) options.images = images;
    if (audio.length) options.audio = audio;
    try {
      const conv = this.conv;
      const { text, finishReason, stats: engineStats, sources } = await conv.send(prompt, options);
      if (this.conv === conv) for (const m of media) this.mediaKinds.add(m.kind);
      // What the reply's media were, for its stats line ("image: 128 tokens, encode 5.8 s").
      const stats = { ...engineStats, mediaKind: this.mediaKind(model.info) };
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
      // Attached bytes the engine cannot read (not an image or audio it decodes, too large, ...)
      // are the request's fault; the conversation is as it was before the turn.
      const badMedia = media.length > 0 && ['ERR_INVALID_ARGUMENT', 'ERR_CORRUPT_DATA',
                                            'ERR_RESOURCE_EXHAUSTED'].includes(err?.code);
      sendError(res, badMedia
        ? new HttpError(422, `cannot use the attached ${media.map((m) => m.name).join(', ')}: ` +
                             describe(err))
        : new HttpError(500, `generation failed: ${describe(err)}`));
    } finally {
      this.gen = null;
    }
  }

  // "image", "audio" or "media": what this conversation attached, else what the projector takes.
  mediaKind(info) {
    if (this.mediaKinds.size === 1) return [...this.mediaKinds][0];
    if (this.mediaKinds.size === 0 && info.vision !== info.audio) {
      return info.vision ? 'image' : 'audio';
    }
    return 'media';
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

// The chat request's `media`: [{name, type, data}] with `data` the file's bytes as base64 and
// `type` its MIME type (image/... or audio/...).
function readMedia(media) {
  if (media === undefined || media === null) return [];
  if (!Array.isArray(media) || media.length > kMaxMediaItems) {
    throw new HttpError(400, `"media" must be an array of at most ${kMaxMediaItems} ` +
                             '{name, type, data} (data: the file as base64)');
  }
  return media.map((m, i) => {
    const name = typeof m?.name === 'string' && m.name ? m.name : `media item ${i + 1}`;
    if (typeof m?.data !== 'string' || m.data === '') {
      throw new HttpError(400, `${name}: "data" must be the file's bytes as base64`);
    }
    const type = typeof m.type === 'string' ? m.type : '';
    const kind = type.startsWith('image/') ? 'image' : type.startsWith('audio/') ? 'audio' : null;
    if (!kind) {
      throw new HttpError(400, `${name}: attach an image (image/*) or an audio clip (audio/*), ` +
                               `not ${type ? JSON.stringify(type) : 'a file of unknown type'}`);
    }
    const buf = Buffer.from(m.data, 'base64');
    if (buf.length === 0) throw new HttpError(400, `${name} is empty`);
    if (buf.length > kMaxMediaBytes) {
      throw new HttpError(413, `${name} is above ${kMaxMediaBytes >> 20} MiB`);
    }
    return { name, kind, bytes: new Uint8Array(buf.buffer, buf.byteOffset, buf.length) };
  });
}

// Media need a model loaded with a projector that takes them.
function checkMediaFits(media, info) {
  if (media.length === 0) return;
  if (!info.vision && !info.audio) {
    throw new HttpError(409, `${path.basename(info.path)} was loaded without a projector: pick ` +
                             'one under Projector (an mmproj .gguf made for this model) and ' +
                             'press Load, or start the server with --mmproj FILE');
  }
  for (const m of media) {
    if ((m.kind === 'image' && !info.vision) || (m.kind === 'audio' && !info.audio)) {
      throw new HttpError(400, `${m.name}: the projector ${path.basename(info.mmprojPath)} takes ` +
                               `${info.vision ? 'images' : 'audio'} only`);
    }
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

'use strict';
// Conversation: a chat on a Model that keeps its KV cache between turns (edgellm::Conversation
// on the model's worker). Every call is queued on the model with its generate() calls, so the
// one session serves them in call order. Types: index.d.ts; design: docs/node.md.

const { textStream } = require('./stream.js');

// Frees the native conversation of one that is garbage-collected without dispose().
const registry = typeof FinalizationRegistry === 'function'
  ? new FinalizationRegistry(({ bridge, id }) => {
    if (!bridge.disposed()) bridge.job(() => bridge.native.conversationFree(id)).catch(() => {});
  })
  : null;

function disposedConversation() {
  const err = new Error('edgellm: the conversation is disposed; create a new one');
  err.code = 'ERR_DISPOSED';
  return err;
}

// A conversation's index and retrieval options (checked once, at creation).
function retrievalOf(bridge, o) {
  if (o.index === undefined || o.index === null) return {};
  if (!bridge.isIndex(o.index)) throw new TypeError('index must be a DocumentIndex from openIndex()');
  return { index: o.index, retrieval: o.retrieval };
}

function nativeConversationOptions(o = {}) {
  const out = {};
  for (const k of ['systemPrompt', 'overflow', 'promptCache', 'promptCacheBytes', 'chatmlFallback',
                   'keepSampledTokens']) {
    if (o[k] !== undefined) out[k] = o[k];
  }
  return out;
}

// Conversations created with a savePath, which enterBackground() saves (index.js).
const autosaved = new Set();

function checkSavePath(p) {
  if (p !== undefined && (typeof p !== 'string' || p === '')) {
    throw new TypeError('savePath must be a non-empty string (a file under the app\'s filesDir)');
  }
  return p;
}

class Conversation {
  #bridge;
  #savePath;
  #id;
  #history;
  #systemPrompt;
  #overflow;
  #disposed = false;
  #restoreInfo;
  #index;
  #retrieval;

  constructor(bridge, init) {
    if (!bridge || !init || typeof init.id !== 'number') {
      throw new TypeError('use model.conversation() or model.restoreConversation()');
    }
    this.#bridge = bridge;
    this.#id = init.id;
    this.#history = init.history;
    this.#systemPrompt = init.systemPrompt;
    this.#overflow = init.overflow;
    this.#restoreInfo = init.restore;
    this.#savePath = init.savePath;
    this.#index = init.index;
    this.#retrieval = init.retrieval;
    if (this.#savePath !== undefined) autosaved.add(this);
    registry?.register(this, { bridge, id: init.id }, this);
  }

  static async create(bridge, options = {}) {
    const savePath = checkSavePath(options.savePath);
    const o = nativeConversationOptions(options);
    const r = await bridge.job(() => bridge.native.conversationCreate(o));
    return new Conversation(bridge, { ...r, savePath, ...retrievalOf(bridge, options) });
  }

  static async restore(bridge, filePath, options = {}) {
    const savePath = checkSavePath(options.savePath);
    const o = nativeConversationOptions(options);
    const r = await bridge.job(() => bridge.native.conversationLoad(filePath, o));
    return new Conversation(bridge, { ...r, savePath, ...retrievalOf(bridge, options) });
  }

  /** Where enterBackground() saves this conversation (undefined: it does not). */
  get savePath() { return this.#savePath; }

  /** The history, oldest first (a copy). */
  get history() { return this.#history.map((m) => ({ ...m })); }
  get systemPrompt() { return this.#systemPrompt; }
  get overflow() { return this.#overflow; }
  get disposed() { return this.#disposed; }
  /** After model.restoreConversation(): whether the KV cache came back, and why not. */
  get restoreInfo() { return this.#restoreInfo; }

  /** The index each user turn is grounded in (null: none). */
  get index() { return this.#index ?? null; }

  send(text, options = {}) {
    if (typeof text !== 'string') return Promise.reject(new TypeError('text must be a string'));
    const index = options.index === undefined ? this.#index : options.index;
    if (index) {
      // The turn carries the chunks (they stay in the history with it); `sources` lists them.
      return this.#bridge.grounded({ ...options, index, retrieval: options.retrieval ?? this.#retrieval },
                                   text, (t, o) => this.#generate(t, o));
    }
    return this.#generate(text, options);
  }

  stream(text, options = {}) {
    return textStream((o) => this.send(text, o), options);
  }

  /** Drops the last reply (if any) and answers the last user turn again. */
  regenerate(options = {}) {
    return this.#generate(null, options);
  }

  /** Keeps the first `n` messages. */
  truncate(n) { return this.#edit('truncate', n); }
  /** Replaces the text of message `index` and drops those after it; regenerate() answers it. */
  edit(index, text) { return this.#edit('edit', index, text); }
  /** Empties the history (the system prompt stays). */
  reset() { return this.#edit('reset'); }
  /** Replaces the whole history ([{role, content}], oldest first). */
  setHistory(messages) { return this.#edit('setHistory', messages); }

  /** Prefills the system prompt now (from the prompt cache when it holds it). */
  prepare() {
    return this.#job(() => this.#bridge.native.conversationPrepare(this.#id));
  }

  /** Writes the history and, when they are this conversation's, the KV cells to `path`. */
  save(filePath) {
    if (typeof filePath !== 'string') return Promise.reject(new TypeError('path must be a string'));
    return this.#job(() => this.#bridge.native.conversationSave(this.#id, filePath));
  }

  /** Frees the native conversation. Idempotent; later calls reject with ERR_DISPOSED. */
  dispose() {
    if (this.#disposed) return Promise.resolve();
    this.#disposed = true;
    autosaved.delete(this);
    registry?.unregister(this);
    if (this.#bridge.disposed()) return Promise.resolve();
    return this.#bridge.job(() => this.#bridge.native.conversationFree(this.#id)).catch(() => {});
  }

  #generate(text, options) {
    if (this.#disposed) return Promise.reject(disposedConversation());
    const native = this.#bridge.native;
    const o = this.#bridge.nativeGenerateOptions(options);
    return this.#bridge.generate(options, (onBatch) =>
      native.conversationSend(this.#id, text, o, onBatch)).then((res) => {
      if (res.history) {
        this.#history = res.history;
        delete res.history;
      }
      return res;
    });
  }

  #edit(op, a, b) {
    if (this.#disposed) return Promise.reject(disposedConversation());
    return this.#bridge.job(() => this.#bridge.native.conversationEdit(this.#id, op, a, b))
      .then((history) => { this.#history = history; });
  }

  #job(start) {
    if (this.#disposed) return Promise.reject(disposedConversation());
    return this.#bridge.job(start);
  }
}

/** The live conversations that have a savePath. */
function autosavedConversations() { return [...autosaved]; }

module.exports = { Conversation, autosavedConversations };

'use strict';
// Retrieval: Embedder (embeddings and rerank) and DocumentIndex (the user's documents in one
// SQLite file, searched by vector, by words or both) over the addon's NativeEmbedder and
// NativeIndex, each on its own worker thread. Types: index.d.ts; design: docs/node.md
// "Documents".

function createRetrieval(native, { abortError, retain, release }) {
  function disposed(what, again) {
    const err = new Error(`edgellm: the ${what} is ${what === 'index' ? 'closed' : 'disposed'}; ` +
      again);
    err.code = 'ERR_DISPOSED';
    return err;
  }

  // Runs `start(onProgress, handle)` (a native call taking a progress callback and a cancel
  // holder) with the caller's AbortSignal and onProgress.
  function cancellable(options, start) {
    const { signal, onProgress } = options;
    if (signal?.aborted) return Promise.reject(abortError(signal));
    const handle = {};
    const progress = onProgress
      ? (p) => { try { onProgress(p); } catch { /* the caller's problem */ } }
      : undefined;
    let p;
    try {
      p = start(progress, handle);
    } catch (err) {
      return Promise.reject(err);
    }
    const onAbort = () => handle.cancel?.();
    signal?.addEventListener('abort', onAbort, { once: true });
    return p.then(
      (v) => { signal?.removeEventListener('abort', onAbort); return v; },
      (err) => {
        signal?.removeEventListener('abort', onAbort);
        throw signal?.aborted ? abortError(signal) : err;
      });
  }

  function checkTexts(texts) {
    const list = typeof texts === 'string' ? [texts] : texts;
    if (!Array.isArray(list)) throw new TypeError('texts must be a string or an array of strings');
    return list;
  }

  class Embedder {
    #native;
    #info;
    #disposed = false;
    #disposing = null;

    constructor(nativeEmbedder, info) {
      if (!(nativeEmbedder instanceof native.NativeEmbedder)) {
        throw new TypeError('use loadEmbedder(path, options) to create an Embedder');
      }
      this.#native = nativeEmbedder;
      this.#info = Object.freeze(info);
    }

    static async load(modelPath, options = {}) {
      if (typeof modelPath !== 'string') throw new TypeError('path must be a string');
      const { signal, onProgress } = options;
      if (signal?.aborted) throw abortError(signal);
      const ne = new native.NativeEmbedder();
      retain();
      const onAbort = () => ne.cancel();
      signal?.addEventListener('abort', onAbort, { once: true });
      let info;
      try {
        info = await ne.load(modelPath, {
          threads: options.threads, pooling: options.pooling, maxTokens: options.maxTokens,
          batchTokens: options.batchTokens, batchTexts: options.batchTexts,
          queryPrefix: options.queryPrefix, documentPrefix: options.documentPrefix,
          loadMode: options.loadMode,
        }, onProgress ? (p) => { try { onProgress(p); } catch { /* ignored */ } } : undefined);
      } catch (err) {
        await ne.dispose();
        release();
        if (signal?.aborted) throw abortError(signal);
        throw err;
      } finally {
        signal?.removeEventListener('abort', onAbort);
      }
      return new Embedder(ne, info);
    }

    get info() { return this.#info; }
    get disposed() { return this.#disposed; }
    /** @internal the addon object, for DocumentIndex.open and rerankers. */
    get nativeHandle() { return this.#disposed ? null : this.#native; }

    /** One Float32Array per text, in input order. */
    async embed(texts, options = {}) {
      return (await this.embedDetailed(texts, options)).vectors;
    }

    embedDetailed(texts, options = {}) {
      if (this.#disposed) return Promise.reject(disposed('embedder', 'load it again'));
      return cancellable(options, (progress, handle) => this.#native.embed(checkTexts(texts), {
        kind: options.kind, normalize: options.normalize, truncate: options.truncate,
      }, progress, handle));
    }

    rerank(query, documents, options = {}) {
      if (this.#disposed) return Promise.reject(disposed('embedder', 'load it again'));
      return cancellable(options, (progress, handle) => {
        if (typeof query !== 'string') throw new TypeError('query must be a string');
        return this.#native.rerank(query, checkTexts(documents), { truncate: options.truncate },
                                   progress, handle);
      });
    }

    /** Cancels running and queued calls and frees the model. Idempotent. */
    dispose() {
      if (!this.#disposing) {
        this.#disposed = true;
        this.#disposing = this.#native.dispose().finally(release);
      }
      return this.#disposing;
    }
  }

  function nativeSearchOptions(o = {}) {
    const out = { topK: o.topK, mode: o.mode, rerankTopN: o.rerankTopN };
    if (o.reranker !== undefined && o.reranker !== null) {
      if (!(o.reranker instanceof Embedder)) {
        throw new TypeError('reranker must be an Embedder from loadEmbedder()');
      }
      out.reranker = o.reranker.nativeHandle;
    }
    return out;
  }

  class DocumentIndex {
    #native;
    #embedder;
    #closed = false;
    #closing = null;

    constructor(nativeIndex, embedder) {
      if (!(nativeIndex instanceof native.NativeIndex)) {
        throw new TypeError('use openIndex(dir, embedder, options) to open a DocumentIndex');
      }
      this.#native = nativeIndex;
      this.#embedder = embedder;
    }

    static async open(dir, embedder, options = {}) {
      if (typeof dir !== 'string') throw new TypeError('dir must be a string');
      if (embedder !== null && embedder !== undefined && !(embedder instanceof Embedder)) {
        throw new TypeError('embedder must be an Embedder from loadEmbedder(), or null');
      }
      if (embedder?.disposed) throw disposed('embedder', 'load it again');
      const ni = new native.NativeIndex();
      retain();
      try {
        await ni.open(dir, embedder ? embedder.nativeHandle : null, {
          vectorType: options.vectorType, chunkTokens: options.chunkTokens,
          chunkOverlap: options.chunkOverlap, readOnly: options.readOnly,
        });
      } catch (err) {
        await ni.close();
        release();
        throw err;
      }
      return new DocumentIndex(ni, embedder ?? null);
    }

    get embedder() { return this.#embedder; }
    get closed() { return this.#closed; }

    addText(source, text, options = {}) {
      if (this.#closed) return Promise.reject(disposed('index', 'open it again'));
      return cancellable(options, (progress, handle) =>
        this.#native.add('text', source, text, progress, handle));
    }

    addFile(filePath, options = {}) {
      if (this.#closed) return Promise.reject(disposed('index', 'open it again'));
      return cancellable(options, (progress, handle) =>
        this.#native.add('file', filePath, undefined, progress, handle));
    }

    remove(source) { return this.#call(() => this.#native.remove(source)); }
    search(query, options = {}) {
      return this.#call(() => this.#native.search(query, nativeSearchOptions(options)));
    }
    /** The question with the best chunks before it, numbered, and the chunks it cites. */
    ground(question, options = {}) {
      return this.#call(() => this.#native.ground(question, {
        ...nativeSearchOptions(options), maxContextTokens: options.maxContextTokens,
        instruction: options.instruction,
      }));
    }
    stats() { return this.#call(() => this.#native.stats()); }

    /** Cancels a running add (the index keeps what it had) and closes. Idempotent. */
    close() {
      if (!this.#closing) {
        this.#closed = true;
        this.#closing = this.#native.close().finally(release);
      }
      return this.#closing;
    }

    #call(start) {
      if (this.#closed) return Promise.reject(disposed('index', 'open it again'));
      try {
        return start();
      } catch (err) {
        return Promise.reject(err);
      }
    }
  }

  /** Cosine similarity of two vectors of equal length. */
  function cosineSimilarity(a, b) {
    if (!a || !b || a.length !== b.length) throw new TypeError('vectors of equal length expected');
    let dot = 0;
    let na = 0;
    let nb = 0;
    for (let i = 0; i < a.length; i++) {
      dot += a[i] * b[i];
      na += a[i] * a[i];
      nb += b[i] * b[i];
    }
    return na > 0 && nb > 0 ? dot / Math.sqrt(na * nb) : 0;
  }

  return { Embedder, DocumentIndex, cosineSimilarity };
}

module.exports = { createRetrieval };

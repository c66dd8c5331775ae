// The demo's documents: an embedding model (--embedding-model) and one DocumentIndex in the
// store (demo-docs/), filled from text files the page reads, and the retrieval options a chat
// turn grounded in them uses. What each cited chunk was found by goes back to the page as is:
// with a random-weights embedding model only words (lexical search) find meaningful chunks,
// and the page says so instead of pretending the vectors understood the question.
import path from 'node:path';
import { HttpError } from './http.mjs';

export const kMaxDocBytes = 1024 * 1024;
const kModes = ['hybrid', 'lexical', 'vector'];

function describe(err) {
  return err?.code ? `${err.message} (${err.code})` : String(err?.message ?? err);
}

// What the page shows of a cited chunk.
export function sourceView(h) {
  return { source: h.source, start: h.start, end: h.end, text: h.text, foundBy: h.foundBy,
           vectorRank: h.vectorRank, lexicalRank: h.lexicalRank,
           vectorScore: h.vectorScore, lexicalScore: h.lexicalScore };
}

export class Docs {
  constructor(addon, { embeddingModel, store, threads }) {
    this.addon = addon;
    this.file = embeddingModel ? path.resolve(embeddingModel) : '';
    this.dir = path.join(store, 'demo-docs');
    this.threads = threads;
    this.opening = null;  // the promise of { embedder, index }
    this.busy = false;    // an add is running
  }

  get enabled() { return this.file !== ''; }

  // The embedder and the index, opened on first use.
  open() {
    if (!this.enabled) {
      throw new HttpError(409, 'documents need an embedding model: start the demo with ' +
        '--embedding-model FILE (e.g. edgellm synth --preset minilm-l6 -o minilm.gguf)');
    }
    this.opening ??= (async () => {
      const embedder = await this.addon.loadEmbedder(this.file,
        this.threads ? { threads: this.threads } : {});
      try {
        const index = await this.addon.openIndex(this.dir, embedder, { chunkTokens: 64,
                                                                       chunkOverlap: 16 });
        return { embedder, index };
      } catch (err) {
        await embedder.dispose();
        throw err;
      }
    })().catch((err) => {
      this.opening = null;
      throw new HttpError(422, `cannot open the documents: ${describe(err)}`);
    });
    return this.opening;
  }

  // GET /api/docs
  async status() {
    if (!this.enabled) {
      return { enabled: false, reason: 'start the demo with --embedding-model FILE to add documents' };
    }
    const { embedder, index } = await this.open();
    const st = await index.stats();
    const random = /edgellm-synth/.test(embedder.info.name);
    return { enabled: true, model: embedder.info.name, dims: embedder.info.dims, random,
             sources: st.sourceNames, chunks: st.chunks, bytesOnDisk: st.bytesOnDisk };
  }

  // POST /api/docs/add {name, text}
  async add({ name, text }) {
    if (typeof name !== 'string' || name.trim() === '' || name.length > 200) {
      throw new HttpError(400, '"name" must be a file name of 1..200 characters');
    }
    if (typeof text !== 'string' || text.trim() === '') {
      throw new HttpError(400, `"text" of ${name} is empty: pick a UTF-8 text file with some text`);
    }
    if (Buffer.byteLength(text) > kMaxDocBytes) {
      throw new HttpError(413, `${name} is over ${kMaxDocBytes} bytes: split it into smaller files`);
    }
    const { index } = await this.open();
    if (this.busy) throw new HttpError(409, 'a document is being added: wait for it');
    this.busy = true;
    try {
      const r = await index.addText(path.basename(name), text);
      return { ...r, stats: await this.status() };
    } catch (err) {
      throw new HttpError(422, `cannot add ${name}: ${describe(err)}`);
    } finally {
      this.busy = false;
    }
  }

  // POST /api/docs/remove {source}
  async remove({ source }) {
    if (typeof source !== 'string') throw new HttpError(400, '"source" must be a string');
    const { index } = await this.open();
    const removed = await index.remove(source);
    return { removed, stats: await this.status() };
  }

  // The options of a chat turn grounded in the documents (body.docs: "hybrid", "lexical" or
  // "vector"; absent or false: not grounded). The chunks get at most a quarter of the chat
  // model's context `ctx` (counted in the embedder's tokens), so a small model keeps room for
  // the question, the history and the reply.
  async sendOptions(mode, ctx) {
    if (mode === undefined || mode === false || mode === null) return {};
    if (!kModes.includes(mode)) {
      throw new HttpError(400, `"docs" must be one of ${kModes.join(', ')} (or false)`);
    }
    const { index } = await this.open();
    return { index, retrieval: { mode, topK: 3, maxContextTokens: Math.max(32, Math.floor(ctx / 4)) } };
  }

  async close() {
    const opened = await this.opening?.catch(() => null);
    this.opening = null;
    if (!opened) return;
    await opened.index.close();
    await opened.embedder.dispose();
  }
}

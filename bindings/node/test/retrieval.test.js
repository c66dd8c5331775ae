'use strict';
// Documents through the bridge against real libllama and SQLite: embeddings as Float32Array
// equal to the CLI's (the library's, compared with llama-embedding in tests/embed_test.cc),
// rerank, an index with add/search/remove/stats, the model-identity refusal, cancel, dispose
// in flight, and grounded answers in a conversation and a single generate.
// Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const edgellm = require('..');
const { model, scratch } = require('../testutil/fixtures');

const { loadEmbedder, openIndex, cosineSimilarity, Model, Embedder, DocumentIndex } = edgellm;
const cli = path.resolve(__dirname, '..', '..', '..', 'build', 'bin', 'edgellm');
const texts = ['The lighthouse keeper counted ships every night.', '灯塔看守人每晚数船。',
               'Stocks fell sharply on Tuesday after the report.'];
const notes = 'The lighthouse keeper counted ships every night. He wrote their names in a ' +
  'ledger bound in green leather. In winter the sea froze near the harbour, and no ships came. ' +
  'Then he repaired the lamp and read old letters. 灯塔看守人每晚数船。冬天港口结冰，没有船来。';

function cliJson(args) {
  return JSON.parse(execFileSync(cli, [...args, '--json'], { stdio: ['ignore', 'pipe', 'ignore'],
                                                            maxBuffer: 64 << 20 }).toString());
}

test('embed returns one Float32Array per text, equal to the CLI and independent of its batch',
     async () => {
  const file = model('minilm-l6', 'Q8_0');
  const emb = await loadEmbedder(file, { threads: 2 });
  try {
    assert.ok(emb instanceof Embedder);
    assert.equal(emb.info.dims, 384);
    assert.equal(emb.info.pooling, 'mean');
    assert.equal(emb.info.canEmbed, true);
    assert.equal(emb.info.canRerank, false);
    const progress = [];
    const d = await emb.embedDetailed(texts, { onProgress: (p) => progress.push(p) });
    assert.equal(d.vectors.length, texts.length);
    assert.deepEqual(progress.at(-1), { done: 3, total: 3 });
    const ref = cliJson(['embed', '-m', file, ...texts.flatMap((t) => ['-p', t])]);
    for (const [i, v] of d.vectors.entries()) {
      assert.ok(v instanceof Float32Array);
      assert.equal(v.buffer.byteLength, 384 * 4, 'each vector has its own buffer');
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-5, 'L2-normalized');
      const diff = Math.max(...v.map((x, j) => Math.abs(x - ref.embeddings[i][j])));
      assert.ok(diff < 1e-6, `text ${i}: max |diff| vs the CLI ${diff}`);
      assert.ok(d.nTokens[i] > 2);
    }
    assert.equal(d.stats.texts, 3);
    assert.equal(d.stats.tokens, d.nTokens.reduce((a, b) => a + b));
    // Alone, a string, unnormalized.
    const [alone] = await emb.embed(texts[1]);
    assert.ok(cosineSimilarity(alone, d.vectors[1]) > 0.9999);
    const [raw] = await emb.embed(texts[1], { normalize: false });
    assert.ok(Math.abs(Math.hypot(...raw) - 1) > 1e-3);
    assert.ok(cosineSimilarity(raw, alone) > 0.9999);
  } finally {
    await emb.dispose();
  }
});

test('bad input to an embedder is a clear error, and a chat model is not an embedder', async () => {
  const emb = await loadEmbedder(model('minilm-l6', 'Q8_0'), { threads: 2 });
  try {
    await assert.rejects(emb.embed(['fine', '']), { code: 'ERR_INVALID_ARGUMENT', message: /empty/ });
    await assert.rejects(emb.embed(['a\0b']), { code: 'ERR_INVALID_ARGUMENT', message: /NUL/ });
    await assert.rejects(emb.embed('word '.repeat(2000)),
                         { code: 'ERR_INVALID_ARGUMENT', message: /tokens/ });
    const cut = await emb.embedDetailed('word '.repeat(2000), { truncate: true });
    assert.deepEqual(cut.truncated, [true]);
    assert.equal(cut.nTokens[0], 512);
    await assert.rejects(emb.embed(42), { name: 'TypeError' });
    await assert.rejects(emb.embed(['x'], { kind: 'title' }), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(emb.rerank('q', ['d']), { code: 'ERR_INVALID_ARGUMENT', message: /not a reranker/ });
  } finally {
    await emb.dispose();
  }
  await assert.rejects(emb.embed('x'), { code: 'ERR_DISPOSED' });
  await emb.dispose();  // idempotent
  await assert.rejects(loadEmbedder(model('tiny')), { code: 'ERR_INVALID_ARGUMENT', message: /not an embedding model/ });
  await assert.rejects(loadEmbedder('/nonexistent.gguf'), { code: 'ERR_NOT_FOUND' });
});

test('cancel and dispose in the middle of an embed settle it', async () => {
  const emb = await loadEmbedder(model('minilm-l6', 'Q8_0'), { threads: 2, batchTexts: 2 });
  const many = Array.from({ length: 200 }, (_, i) => `note ${i}: ${texts[i % 3]}`);
  const ac = new AbortController();
  await assert.rejects(emb.embed(many, { signal: ac.signal, onProgress: () => ac.abort() }),
                       { name: 'AbortError' });
  const inFlight = emb.embed(many);
  const disposed = emb.dispose();
  await assert.rejects(inFlight, { code: 'ERR_CANCELLED' });
  await disposed;
});

test('rerank scores equal the CLI, with probabilities and the order', async () => {
  const file = model('bge-reranker-base', 'Q8_0');
  const rr = await loadEmbedder(file, { threads: 2 });
  try {
    assert.equal(rr.info.canRerank, true);
    const docs = ['the cat is on the mat', 'stocks fell', '猫在垫子上'];
    const r = await rr.rerank('where is the cat?', docs);
    const ref = cliJson(['rerank', '-m', file, '-q', 'where is the cat?', ...docs]);
    for (const x of ref.results) {
      assert.ok(Math.abs(r.scores[x.index] - x.score) < 1e-5, `doc ${x.index}`);
    }
    for (const [i, s] of r.scores.entries()) {
      assert.ok(Math.abs(r.probabilities[i] - 1 / (1 + Math.exp(-s))) < 1e-6);
    }
    const sorted = [...r.scores.keys()].sort((a, b) => r.scores[b] - r.scores[a] || a - b);
    assert.deepEqual(r.order, sorted);
    await assert.rejects(rr.embed('x'), { code: 'ERR_INVALID_ARGUMENT' });
  } finally {
    await rr.dispose();
  }
});

test('an index adds, searches by words, vectors or both, removes, and refuses another model',
     async () => {
  const dir = scratch('index');
  const emb = await loadEmbedder(model('minilm-l6', 'Q8_0'), { threads: 2 });
  const idx = await openIndex(dir, emb, { chunkTokens: 32, chunkOverlap: 8 });
  try {
    assert.ok(idx instanceof DocumentIndex);
    const progress = [];
    const a = await idx.addText('notes/lighthouse.txt', notes, { onProgress: (p) => progress.push(p) });
    assert.equal(a.source, 'notes/lighthouse.txt');
    assert.ok(a.chunks >= 2, `${a.chunks} chunks`);
    assert.deepEqual(progress.at(-1), { done: a.chunks, total: a.chunks });
    await idx.addText('market.txt', texts[2]);
    const lex = await idx.search('ledger', { mode: 'lexical', topK: 3 });
    assert.equal(lex.hits.length, 1);
    assert.equal(lex.hits[0].foundBy, 'lexical');
    assert.match(lex.hits[0].text, /ledger/);
    assert.equal(notes.slice(lex.hits[0].start, lex.hits[0].end), lex.hits[0].text);
    const zh = await idx.search('港口', { topK: 3 });
    assert.equal(zh.hits[0].foundBy, 'both');
    assert.match(zh.hits[0].text, /港口/);
    const vec = await idx.search('ships at night', { mode: 'vector', topK: 10 });
    assert.equal(vec.hits.length, a.chunks + 1);
    assert.ok(vec.hits.every((h) => h.foundBy === 'vector' && h.vectorRank > 0));
    let st = await idx.stats();
    assert.deepEqual([st.sources, st.chunks, st.dims, st.vectorType], [2, a.chunks + 1, 384, 'f32']);
    assert.equal(st.modelIdentity, emb.info.identity);
    // A cancelled add leaves the index as it was.
    const ac = new AbortController();
    await assert.rejects(idx.addText('big.txt', notes.repeat(40),
                                     { signal: ac.signal, onProgress: () => ac.abort() }),
                         { name: 'AbortError' });
    assert.equal((await idx.stats()).sources, 2);
    assert.equal(await idx.remove('market.txt'), 1);
    assert.equal(await idx.remove('market.txt'), 0);
    st = await idx.stats();
    assert.deepEqual(st.sourceNames, ['notes/lighthouse.txt']);
    await assert.rejects(idx.search('x', { mode: 'sideways' }), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(idx.search('x', { reranker: {} }), { name: 'TypeError' });
  } finally {
    await idx.close();
    await emb.dispose();
  }
  await assert.rejects(idx.stats(), { code: 'ERR_DISPOSED' });
  // Another model's vectors are refused; without an embedder, words still find chunks.
  const other = await loadEmbedder(model('minilm-l6', 'Q8_0', 2), { threads: 2 });
  try {
    await assert.rejects(openIndex(dir, other), { code: 'ERR_FAILED_PRECONDITION', message: /model/ });
  } finally {
    await other.dispose();
  }
  const ro = await openIndex(dir, null, { readOnly: true });
  try {
    const r = await ro.search('ledger', { mode: 'lexical' });
    assert.equal(r.hits.length, 1);
    await assert.rejects(ro.search('ledger', { mode: 'vector' }), { code: 'ERR_FAILED_PRECONDITION' });
    await assert.rejects(ro.addText('x', 'y'), { code: 'ERR_FAILED_PRECONDITION' });
  } finally {
    await ro.close();
  }
});

test('grounded answers: a conversation and a generate cite the chunks they were given',
     async () => {
  const emb = await loadEmbedder(model('minilm-l6', 'Q8_0'), { threads: 2 });
  const idx = await openIndex(scratch('grounded'), emb, { chunkTokens: 32, chunkOverlap: 8 });
  const m = await Model.load(model(), { ctx: 2048 });
  try {
    await idx.addText('lighthouse.txt', notes);
    const chat = await m.conversation({ index: idx, retrieval: { topK: 2, mode: 'lexical' } });
    assert.equal(chat.index, idx);
    const r = await chat.send('What did he write in the ledger?', { temperature: 0, maxTokens: 8 });
    assert.ok(r.sources.length >= 1);
    assert.equal(r.sources[0].source, 'lighthouse.txt');
    assert.equal(r.sources[0].foundBy, 'lexical');
    const user = chat.history.find((h) => h.role === 'user');
    assert.match(user.content, /\[1\] \(lighthouse\.txt\)/);
    assert.match(user.content, /What did he write in the ledger\?$/);
    // The next turn reuses the KV cache of the first, chunks and all.
    const r2 = await chat.send('港口怎么了？', { temperature: 0, maxTokens: 8 });
    assert.ok(r2.stats.nCached > 0, `reused ${r2.stats.nCached}`);
    assert.match(r2.sources[0].text, /港口/);
    // Nothing found: the question goes alone, with no sources.
    const r3 = await chat.send('zebra', { temperature: 0, maxTokens: 4 });
    assert.deepEqual(r3.sources, []);
    const g = await m.generate('ledger', { index: idx, retrieval: { mode: 'lexical' }, maxTokens: 4 });
    assert.equal(g.sources.length, 1);
    await assert.rejects(m.generate('x', { index: {} }), { name: 'TypeError' });
    await assert.rejects(m.conversation({ index: 'dir' }), { name: 'TypeError' });
  } finally {
    await m.dispose();
    await idx.close();
    await emb.dispose();
  }
});

test('process.exit() while an embedder and an index work exits cleanly', () => {
  const { spawnSync } = require('node:child_process');
  const script = `const e = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const emb = await e.loadEmbedder(${JSON.stringify(model('minilm-l6', 'Q8_0'))}, { threads: 1 });
      const idx = await e.openIndex(${JSON.stringify(scratch('exit'))}, emb);
      emb.embed(Array.from({ length: 400 }, (_, i) => 'text ' + i)).catch(() => {});
      idx.addText('a', 'one sentence. '.repeat(400)).catch(() => {});
      setTimeout(() => process.exit(3), 20);
    })();`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 3, `signal ${r.signal}, stderr: ${r.stderr}`);
});

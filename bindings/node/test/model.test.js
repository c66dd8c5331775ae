'use strict';
// The bridge against real libllama on a generated model: the seed's contract, batching, the
// stream, cancel, queueing, dispose, errors and the helper functions. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const edgellm = require('..');
const { cli, model } = require('../testutil/fixtures');

const { Model } = edgellm;
// Every guess checked: the same greedy text run after run (docs/speculative.md).
const greedy = { temperature: 0, ignoreEos: true, speculative: { adaptive: false } };

test('the seed contract: InitModel + Generate give the same greedy text as the C++ CLI', async () => {
  const file = model();
  const handle = await edgellm.InitModel(file, 2, 256);
  try {
    assert.equal(handle.info.threads, Math.min(2, handle.info.threads));
    assert.equal(handle.info.ctx, 256);
    assert.equal(handle.info.arch, 'qwen2');
    const text = await edgellm.Generate(handle, 'Hello, world', 24, 0);
    assert.equal(typeof text, 'string');
    assert.ok(text.length > 0);
    const out = JSON.parse(execFileSync(cli, ['run', '-m', file, '-p', 'Hello, world', '-n', '24',
                                              '--temp', '0', '--threads', '2', '--ctx', '256',
                                              '--json', '-q']));
    assert.equal(text, out.text, 'bridge and native engine disagree on greedy output');
  } finally {
    await handle.dispose();
  }
});

test('tokens arrive in batches, never one crossing per token; batches add up to the text', async () => {
  const m = await Model.load(model(), { ctx: 256 });
  try {
    for (const batchTokens of [1, 4]) {
      const pieces = [];
      const infos = [];
      const r = await m.generate('Once upon a time', {
        ...greedy, maxTokens: 40, batchTokens, batchMs: 100000,
        onToken: (t, info) => { pieces.push(t); infos.push(info); },
      });
      assert.equal(r.finishReason, 'length');
      assert.equal(r.stats.nGen, 40);
      assert.equal(pieces.join(''), r.text);
      assert.equal(r.stats.batches, pieces.length);
      infos.forEach((info, i) => {
        assert.equal(info.index, i);
        assert.ok(info.latencyUs >= 0);
        assert.ok(info.tokens >= 0 && info.tokens <= batchTokens + 3, JSON.stringify(info));
      });
      const counted = infos.reduce((a, x) => a + x.tokens, 0);
      assert.equal(infos.at(-1).totalTokens, counted);
      assert.ok(counted <= 40 && counted >= 37, `batches cover ${counted} of 40 tokens`);
      if (batchTokens === 4) {
        // A piece holds up to 4 tokens; a UTF-8 character cut at a batch edge moves a token on.
        assert.ok(pieces.length <= 40 / 4 + 2, `${pieces.length} batches for 40 tokens`);
        assert.ok(pieces.length >= 40 / 4 - 1, `${pieces.length} batches for 40 tokens`);
      } else {
        assert.ok(pieces.length >= 30, `${pieces.length} batches with batchTokens 1`);
      }
      assert.ok(r.stats.deliveryP99Us >= r.stats.deliveryP50Us);
      assert.ok(r.stats.decodeTps > 0 && r.stats.ttftMs > 0);
    }
  } finally {
    await m.dispose();
  }
});

test('stream(): async iteration yields the batches, result has the whole text', async () => {
  const m = await Model.load(model(), { ctx: 256 });
  try {
    const s = m.stream('The weather today', { ...greedy, maxTokens: 20 });
    let joined = '';
    let n = 0;
    for await (const piece of s) { joined += piece; n++; }
    const r = await s.result;
    assert.equal(joined, r.text);
    assert.ok(n >= 2);
    // Breaking out of the loop cancels the generation.
    const s2 = m.stream('The weather today', { ...greedy, maxTokens: 2000, batchTokens: 1 });
    for await (const piece of s2) { assert.ok(piece.length >= 0); break; }
    const r2 = await s2.result;
    assert.equal(r2.finishReason, 'cancelled');
    assert.ok(r2.stats.nGen < 2000);
  } finally {
    await m.dispose();
  }
});

test('AbortSignal cancels a running generation; the partial text comes back', async () => {
  const m = await Model.load(model(), { ctx: 512 });
  try {
    const ac = new AbortController();
    let seen = '';
    const r = await m.generate('Tell me a story', {
      ...greedy, maxTokens: 5000, batchTokens: 2,
      onToken: (t) => { seen += t; if (seen.length > 10) ac.abort(); },
      signal: ac.signal,
    });
    assert.equal(r.finishReason, 'cancelled');
    assert.ok(r.stats.nGen > 0 && r.stats.nGen < 400, `nGen ${r.stats.nGen}`);
    assert.equal(r.text, seen);
    // The model is still usable, and an already aborted signal never starts.
    const again = await m.generate('Tell me a story', { ...greedy, maxTokens: 4 });
    assert.equal(again.stats.nGen, 4);
    const pre = await m.generate('x', { signal: AbortSignal.abort() });
    assert.equal(pre.finishReason, 'cancelled');
    assert.equal(pre.text, '');
  } finally {
    await m.dispose();
  }
});

test('a generate on a busy model is queued and runs in call order', async () => {
  const m = await Model.load(model(), { ctx: 256 });
  try {
    const order = [];
    const ps = [0, 1, 2, 3].map((i) => m.generate(`prompt ${i}`, { ...greedy, maxTokens: 6 })
      .then((r) => { order.push(i); return r; }));
    assert.equal(m.busy, true);
    const rs = await Promise.all(ps);
    assert.deepEqual(order, [0, 1, 2, 3]);
    for (const r of rs) assert.equal(r.stats.nGen, 6);
    assert.ok(rs[3].stats.queuedMs > rs[0].stats.queuedMs);
    assert.equal(m.busy, false);
    // Aborting a queued request settles it at once and it never runs.
    const ac = new AbortController();
    const first = m.generate('a', { ...greedy, maxTokens: 30 });
    const second = m.generate('b', { ...greedy, maxTokens: 30, signal: ac.signal });
    ac.abort();
    const r2 = await second;
    assert.equal(r2.finishReason, 'cancelled');
    assert.equal(r2.stats.nGen, 0);
    assert.equal((await first).stats.nGen, 30);
  } finally {
    await m.dispose();
  }
});

test('dispose during a generation cancels it, waits, frees; nothing runs afterwards', async () => {
  const m = await Model.load(model(), { ctx: 512 });
  let afterDispose = 0;
  let disposed = false;
  let started;
  const gotFirst = new Promise((r) => { started = r; });
  const running = m.generate('Keep going', {
    ...greedy, maxTokens: 5000, batchTokens: 1,
    onToken: () => { if (disposed) afterDispose++; started(); },
  });
  const queued = m.generate('never', { ...greedy, maxTokens: 5 });
  await gotFirst;
  const d1 = m.dispose();
  disposed = true;
  assert.equal(m.dispose(), d1, 'dispose() is idempotent');
  const [r, q] = await Promise.all([running, queued]);
  await d1;
  assert.equal(r.finishReason, 'cancelled');
  assert.equal(q.finishReason, 'cancelled');
  assert.equal(q.stats.nGen, 0);
  await new Promise((res) => setTimeout(res, 50));
  assert.equal(afterDispose, 0, 'an onToken callback ran after dispose()');
  assert.equal(m.disposed, true);
  await assert.rejects(m.generate('x'), { code: 'ERR_DISPOSED' });
  await assert.rejects(m.releaseKv(), { code: 'ERR_DISPOSED' });
});

test('errors: missing and malformed files, bad options, a throwing onToken', async () => {
  await assert.rejects(Model.load('/nonexistent/model.gguf'), { code: 'ERR_NOT_FOUND' });
  const bad = require('node:path').join(require('../testutil/fixtures').scratch('bad'), 'bad.gguf');
  require('node:fs').writeFileSync(bad, 'GGUF this is not a model');
  await assert.rejects(Model.load(bad), (e) => /ERR_(CORRUPT_DATA|INVALID_ARGUMENT)/.test(e.code));
  await assert.rejects(Model.load(model(), { ctx: 'big' }), TypeError);
  await assert.rejects(Model.load(model(), { loadMode: 'floppy' }), { code: 'ERR_INVALID_ARGUMENT' });
  const m = await Model.load(model(), { ctx: 256 });
  try {
    await assert.rejects(m.generate('x', { maxTokens: 1.5 }), TypeError);
    await assert.rejects(m.generate('x', { maxTokens: 0 }), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(m.generate(42), TypeError);
    const boom = new Error('boom');
    await assert.rejects(m.generate('x', { ...greedy, maxTokens: 50, onToken: () => { throw boom; } }),
                         boom);
    assert.equal((await m.generate('x', { ...greedy, maxTokens: 3 })).stats.nGen, 3);
  } finally {
    await m.dispose();
  }
});

test('load: progress stages, abort, releaseKv', async () => {
  const stages = [];
  const m = await Model.load(model(), { ctx: 256, onProgress: (p) => stages.push(p) });
  try {
    assert.equal(stages.at(-1).stage, 'ready');
    assert.ok(stages.some((p) => p.stage === 'loading' && p.progress === 1));
    assert.ok(stages.some((p) => p.stage === 'warming up'));
    await m.releaseKv();
    assert.equal((await m.generate('after release', { ...greedy, maxTokens: 3 })).stats.nGen, 3);
  } finally {
    await m.dispose();
  }
  // Aborted while the worker loads: the load stops at its next progress step or right after.
  const ac = new AbortController();
  const p = Model.load(model(), { loadMode: 'read', signal: ac.signal });
  ac.abort();
  await assert.rejects(p, { name: 'AbortError' });
  await assert.rejects(Model.load(model(), { signal: AbortSignal.abort() }), { name: 'AbortError' });
});

test('device profile, memory usage, memory plan, version', async () => {
  const d = edgellm.deviceProfile();
  assert.ok(d.totalRamBytes > 0 && d.nCpus >= 1 && d.clusters.length >= 1);
  assert.ok(d.bigCores >= 1);
  const mem = edgellm.memoryUsage();
  assert.ok(mem.rssBytes > 0 && mem.peakRssBytes >= mem.rssBytes);
  const plan = await edgellm.planMemory(model(), { ctx: 512, ramBytes: 8 * 2 ** 30 });
  assert.equal(plan.ctx, 512);
  assert.ok(plan.totalBytes > plan.weightsBytes && plan.fits);
  const tiny = await edgellm.planMemory(model(), { ctx: 512, ramBytes: 64 * 2 ** 20 });
  assert.equal(tiny.fits, false);
  assert.ok(tiny.advice.length > 0);
  await assert.rejects(edgellm.planMemory('/nonexistent.gguf'), { code: 'ERR_NOT_FOUND' });
  assert.match(edgellm.version.edgellm, /^\d+\.\d+\.\d+/);
  assert.match(edgellm.version.llama, /80fb11a/);
  assert.throws(() => edgellm.deviceProfile({ root: '/nonexistent-root' }), { code: 'ERR_UNAVAILABLE' });
});

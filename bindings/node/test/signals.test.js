'use strict';
// The app's platform signals against real libllama: thermal level, pause/resume, memory level,
// enterBackground, the log sink. (HarmonyOS delivers these as levels and callbacks; here the
// test is the platform.)
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const edgellm = require('..');
const { model, scratch } = require('../testutil/fixtures');

const { Model } = edgellm;
// Every guess checked: the same greedy text run after run (docs/speculative.md).
const greedy = { temperature: 0, ignoreEos: true, speculative: { adaptive: false } };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

require('node:v8').setFlagsFromString('--expose-gc');
const gc = require('node:vm').runInNewContext('gc');

test.afterEach(() => {
  edgellm.setThermalLevel(-1);
  edgellm.resume();
});

test('bad levels are clear errors, never a crash', () => {
  for (const bad of [7, -2, 1.5, '3', NaN, undefined]) {
    assert.throws(() => edgellm.setThermalLevel(bad), { code: 'ERR_INVALID_ARGUMENT' });
  }
  assert.throws(() => edgellm.setMemoryLevel(3), { code: 'ERR_INVALID_ARGUMENT' });
  assert.throws(() => edgellm.onLog('not a function'), TypeError);
  assert.throws(() => edgellm.onLog(() => {}, { level: 'loud' }), { code: 'ERR_INVALID_ARGUMENT' });
});

test('thermal level changes the thread count mid-generation and back; text unchanged',
     { timeout: 120_000 }, async () => {
  const m = await Model.load(model(), { threads: 2, ctx: 512 });
  try {
    const plain = await m.generate('heat', { ...greedy, maxTokens: 400 });
    assert.equal(plain.stats.threadChanges, 0);
    // OVERHEATED before the first token (1 thread), COOL again once text flows (all threads).
    edgellm.setThermalLevel(4);
    let batches = 0;
    const hot = await m.generate('heat', {
      ...greedy, maxTokens: 400,
      onToken: () => { if (++batches === 1) edgellm.setThermalLevel(0); },
    });
    assert.equal(edgellm.signals().thermalLevel, 0);
    assert.equal(hot.stats.minThreads, 1, 'ran on one thread while OVERHEATED');
    assert.ok(hot.stats.threadChanges >= 2, `down and back up: ${hot.stats.threadChanges}`);
    assert.equal(hot.text, plain.text, 'the thread count does not change greedy output');
  } finally {
    await m.dispose();
  }
});

test('pause/resume parks between tokens; output identical to an uninterrupted run',
     { timeout: 120_000 }, async () => {
  const m = await Model.load(model(), { threads: 2, ctx: 512 });
  try {
    const plain = await m.generate('screen off', { ...greedy, maxTokens: 300 });
    let batches = 0;
    let pausedAt = -1;
    const during = [];
    const r = await m.generate('screen off', {
      ...greedy, maxTokens: 300,
      onToken: () => {
        if (++batches !== 1) return;
        edgellm.pause();
        pausedAt = batches;
        // Batches already on their way arrive at once; none may follow while paused.
        setTimeout(() => during.push(batches), 200);
        setTimeout(() => { during.push(batches); edgellm.resume(); }, 450);
      },
    });
    assert.ok(pausedAt === 1 && during.length === 2);
    assert.equal(during[1], during[0], `batches arrived while paused: ${during}`);
    assert.ok(r.stats.pausedMs >= 300, `parked ${r.stats.pausedMs} ms`);
    assert.equal(r.text, plain.text);
    assert.equal(r.finishReason, 'length');
    // Thermal EMERGENCY parks too, until the level drops.
    setTimeout(() => edgellm.setThermalLevel(1), 300);
    edgellm.setThermalLevel(6);
    const e = await m.generate('screen off', { ...greedy, maxTokens: 8 });
    assert.ok(e.stats.pausedMs >= 150, `EMERGENCY parked ${e.stats.pausedMs} ms`);
  } finally {
    await m.dispose();
  }
});

test('a model loaded while paused starts paused', { timeout: 60_000 }, async () => {
  edgellm.pause();
  const m = await Model.load(model(), { threads: 1, ctx: 128, warmup: false });
  try {
    setTimeout(() => edgellm.resume(), 300);
    const r = await m.generate('later', { ...greedy, maxTokens: 4 });
    assert.ok(r.stats.pausedMs >= 150, `parked ${r.stats.pausedMs} ms`);
  } finally {
    await m.dispose();
  }
});

async function rssMiB() {
  gc();
  await sleep(20);
  return edgellm.memoryUsage().rssBytes / 2 ** 20;
}

test('memory level CRITICAL frees the weights (RSS), and the next request reloads them',
     { timeout: 180_000 }, async () => {
  const file = model('tiny', 'F16');
  const fileMiB = fs.statSync(file).size / 2 ** 20;
  const m = await Model.load(file, { threads: 2, ctx: 256, loadMode: 'read' });
  try {
    const conv = await m.conversation({ chatmlFallback: true });
    const before = await m.generate('memory', { ...greedy, maxTokens: 12 });
    await conv.send('first turn', { ...greedy, maxTokens: 6 });
    const low = await edgellm.setMemoryLevel(1);
    assert.deepEqual(low, { level: 1, models: 1, kvReleased: 1, unloaded: 0 });
    const loaded = await rssMiB();
    const crit = await edgellm.setMemoryLevel(2);
    assert.deepEqual(crit, { level: 2, models: 1, kvReleased: 0, unloaded: 1 });
    const freed = loaded - await rssMiB();
    console.log(`RSS freed by CRITICAL: ${freed.toFixed(1)} MiB of a ${fileMiB.toFixed(1)} MiB model`);
    assert.ok(freed > 0.6 * fileMiB, `freed ${freed.toFixed(1)} MiB of ${fileMiB.toFixed(1)} MiB`);
    assert.equal(edgellm.signals().memoryLevel, 2);
    // Nothing the app holds became invalid: the model and the conversation answer again.
    const after = await m.generate('memory', { ...greedy, maxTokens: 12 });
    assert.equal(after.stats.reloaded, true);
    assert.equal(after.text, before.text);
    const again = await m.generate('memory', { ...greedy, maxTokens: 2 });
    assert.equal(again.stats.reloaded, false);
    await edgellm.setMemoryLevel(2);
    const r2 = await conv.send('second turn', { ...greedy, maxTokens: 6 });
    assert.equal(r2.stats.reloaded, true);
    assert.equal(conv.history.length, 4);
    assert.equal(conv.history[0].content, 'first turn');
    await conv.dispose();
  } finally {
    await m.dispose();
  }
  assert.deepEqual(await edgellm.setMemoryLevel(0), { level: 0, models: 0, kvReleased: 0, unloaded: 0 });
});

test('enterBackground cancels generations and saves conversations with a savePath',
     { timeout: 120_000 }, async () => {
  const dir = scratch('background');
  const savePath = path.join(dir, 'chat.json');
  const m = await Model.load(model(), { threads: 2, ctx: 512 });
  try {
    const conv = await m.conversation({ chatmlFallback: true, savePath });
    assert.equal(conv.savePath, savePath);
    await conv.send('remember me', { ...greedy, maxTokens: 4 });
    let started;
    const firstBatch = new Promise((r) => { started = r; });
    const long = m.generate('a long answer', { ...greedy, maxTokens: 400, onToken: () => started() });
    const queued = m.generate('queued', { ...greedy, maxTokens: 4 });
    await firstBatch;
    const bg = await edgellm.enterBackground();
    assert.equal(bg.models, 1);
    assert.equal(bg.cancelled, 1);
    assert.deepEqual(bg.saved, [savePath]);
    assert.deepEqual(bg.failed, []);
    const [l, q] = await Promise.all([long, queued]);
    assert.equal(l.finishReason, 'cancelled');
    assert.ok(l.stats.nGen < 400);
    assert.equal(q.finishReason, 'cancelled');
    assert.ok(fs.statSync(savePath).size > 0);
    const back = await m.restoreConversation(savePath, { chatmlFallback: true });
    assert.equal(back.history[0].content, 'remember me');
    // The model still works after the background.
    assert.equal((await m.generate('again', { ...greedy, maxTokens: 3 })).stats.nGen, 3);
    await back.dispose();
    await conv.dispose();
    assert.deepEqual((await edgellm.enterBackground({ releaseKv: false })).saved, []);
  } finally {
    await m.dispose();
  }
});

// Polls `cond` every 20 ms for up to 10 s.
async function until(cond) {
  for (const end = Date.now() + 10_000; !cond() && Date.now() < end;) await sleep(20);
}

test("the log sink gets llama.cpp's load lines in batches and never runs after dispose",
     { timeout: 60_000 }, async () => {
  const lines = [];
  let calls = 0;
  const sub = edgellm.onLog((batch) => { calls++; lines.push(...batch); }, { level: 'info' });
  assert.equal(sub.active, true);
  const m = await Model.load(model(), { threads: 1, ctx: 128 });
  await m.generate('log', { ...greedy, maxTokens: 2 });
  // Batches cross on the sink's schedule: wait for them (a busy machine delays delivery).
  await until(() => lines.some((l) => l.source === 'edgellm' && l.text.startsWith('loaded ')));
  const fromLlama = lines.filter((l) => l.source === 'llama.cpp');
  assert.ok(fromLlama.some((l) => /llama_model_loader|print_info|load_tensors/.test(l.text)),
            `no load lines among ${lines.length}`);
  assert.ok(lines.some((l) => l.source === 'edgellm' && l.text.startsWith('loaded ')));
  for (const l of lines) {
    assert.ok(['debug', 'info', 'warn', 'error'].includes(l.level));
    assert.ok(!l.text.includes('\n'));
    assert.ok(l.timeMs > 0);
  }
  assert.ok(calls < lines.length, `batched: ${calls} calls for ${lines.length} lines`);
  assert.ok(!lines.some((l) => l.level === 'debug'), 'nothing below the level asked for');
  sub.dispose();
  sub.dispose();
  assert.equal(sub.active, false);
  const seen = calls;
  const m2 = await Model.load(model(), { threads: 1, ctx: 128 });
  await sleep(100);
  assert.equal(calls, seen, 'called after dispose');
  // A second sink replaces the first, which then goes quiet.
  let a = 0;
  let b = 0;
  const first = edgellm.onLog(() => { a++; });
  const second = edgellm.onLog(() => { b++; });
  assert.equal(first.active, false);
  const m3 = await Model.load(model(), { threads: 1, ctx: 128 });
  await until(() => b > 0);
  assert.equal(a, 0);
  assert.ok(b > 0);
  second.dispose();
  await Promise.all([m.dispose(), m2.dispose(), m3.dispose()]);
});

test('lifecycle stress: signals mixed with generate, dispose and GC', { timeout: 300_000 },
     async () => {
  const file = model();
  const sub = edgellm.onLog(() => {});
  for (let i = 0; i < 12; i++) {
    const m = await Model.load(file, { threads: 2, ctx: 128, warmup: false });
    const conv = await m.conversation({ chatmlFallback: true });
    const work = [
      m.generate(`stress ${i}`, { ...greedy, maxTokens: 24 }),
      conv.send('hi', { ...greedy, maxTokens: 8 }),
      m.generate('more', { ...greedy, maxTokens: 16 }),
    ];
    edgellm.setThermalLevel(i % 7);
    if (i % 3 === 0) edgellm.pause();
    const mem = edgellm.setMemoryLevel(i % 3);
    await sleep(i % 4 === 0 ? 0 : 30);
    edgellm.resume();
    edgellm.setThermalLevel(-1);
    if (i % 4 === 1) {
      await edgellm.enterBackground();
    }
    const disposing = i % 2 === 0 ? m.dispose() : null;
    gc();
    const settled = await Promise.allSettled([...work, mem]);
    for (const s of settled) {
      if (s.status === 'rejected') assert.equal(s.reason.code, 'ERR_DISPOSED');
    }
    if (disposing) await disposing; else await m.dispose();
    gc();
  }
  // A model dropped without dispose() while signals are sent: GC frees it, nothing crashes.
  (await Model.load(file, { threads: 1, ctx: 128, warmup: false })).generate('drop', greedy);
  edgellm.pause();
  gc();
  edgellm.resume();
  await edgellm.setMemoryLevel(2);
  sub.dispose();
});

'use strict';
// Stress: load/generate/dispose cycles (RSS growth), random cancel/restart, concurrent
// generates, dispose mid-stream, and a model garbage-collected without dispose().
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const edgellm = require('..');
const { model } = require('../testutil/fixtures');

const { Model } = edgellm;
// Every guess checked: the same greedy text run after run (docs/speculative.md).
const greedy = { temperature: 0, ignoreEos: true, speculative: { adaptive: false } };

// RSS after a full V8 collection, so JS garbage not yet collected does not count as growth.
require('node:v8').setFlagsFromString('--expose-gc');
const gc = require('node:vm').runInNewContext('gc');
async function rssMiB() {
  gc();
  await new Promise((r) => setTimeout(r, 20));
  return edgellm.memoryUsage().rssBytes / 2 ** 20;
}

// Load -> generate -> dispose `warm + measured` times; the mean RSS of the last 10 warm-up
// cycles against that of the last 10 measured ones. Each end is a mean of 10 samples: single
// readings move by a few MiB with the allocator.
async function cycleRss(file, ctx, warm, measured) {
  const cycle = async (i) => {
    const m = await Model.load(file, { ctx, warmup: i % 2 === 0 });
    const r = await m.generate(`cycle ${i}`, { ...greedy, maxTokens: 4 });
    assert.equal(r.stats.nGen, 4);
    await m.dispose();
  };
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const early = [];
  const late = [];
  for (let i = 0; i < warm; i++) {
    await cycle(i);
    if (i >= warm - 10) early.push(await rssMiB());
  }
  const heapBefore = process.memoryUsage().heapUsed / 2 ** 20;
  for (let i = warm; i < warm + measured; i++) {
    await cycle(i);
    if (i >= warm + measured - 10) late.push(await rssMiB());
  }
  const before = mean(early);
  const after = mean(late);
  const heapAfter = process.memoryUsage().heapUsed / 2 ** 20;
  const growth = (after - before) / before;
  console.log(`${path.basename(file)}: RSS over cycles ${warm - 9}-${warm} ${before.toFixed(1)} ` +
              `MiB, over cycles ${warm + measured - 9}-${warm + measured} ${after.toFixed(1)} MiB ` +
              `(${(100 * growth).toFixed(2)}%); V8 heap ${heapBefore.toFixed(1)} -> ` +
              `${heapAfter.toFixed(1)} MiB`);
  return growth;
}

// The committed model (768-token vocabulary) loads in about 10 ms, so a leak of a few KiB per
// cycle shows: 1,200 cycles in about 30 s. RSS climbs for the first ~300-600 cycles while V8
// optimizes the loop and the allocator's arenas settle (+7% at cycle 400, measured), then stays:
// +0.9% and +1.2% over cycles 600-900 and 600-1200. In clean-clone CI runs the same span grew
// 2.8%, 6.0% and 6.65% (1.9-4.4 MiB, 3-7 KiB a cycle) while 1,500 standalone cycles stayed flat
// (64.0 MiB at 600, 63.9 at 1,500); that growth is not explained yet. The limit is 10%: a leak
// of 12 KiB or more a cycle still fails it.
test('1,200 load -> generate -> dispose cycles of a small model: RSS stays flat',
     { timeout: 600_000 }, async () => {
  const committed = path.join(__dirname, '..', '..', '..', 'assets', 'edgellm-tiny-F32.gguf');
  const growth = await cycleRss(committed, 128, 600, 600);
  assert.ok(growth < 0.10, `RSS grew ${(100 * growth).toFixed(1)}% over 600 cycles`);
});

// The Qwen2 vocabulary (151,936 tokens): a logits row is 594 KiB and loading takes ~0.8 s, so
// 40 cycles show a leaked vocabulary, logits or KV buffer. What edgellm::TuneAllocator fixes
// (glibc keeping a thread arena's freed top chunk resident) takes ~200 such cycles, 4 minutes,
// to show: EDGELLM_MALLOC_TUNING=0 grew 12% and 20% over 200 cycles, 2% over 100 (measured);
// CI no longer runs that length (docs/testing.md).
test('40 load -> generate -> dispose cycles with a full vocabulary: RSS stays flat',
     { timeout: 600_000 }, async () => {
  const growth = await cycleRss(model(), 128, 20, 20);
  assert.ok(growth < 0.05, `RSS grew ${(100 * growth).toFixed(1)}% over 20 cycles`);
});

test('1000 random cancel/restart cycles: every promise settles exactly once', { timeout: 600_000 },
     async () => {
  const m = await Model.load(model(), { ctx: 256 });
  let seed = 12345;
  const rand = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
  const counts = { cancelled: 0, length: 0 };
  let settledTwice = 0;
  try {
    for (let i = 0; i < 1000; i++) {
      const ac = new AbortController();
      let settles = 0;
      const p = m.generate('random cancel', {
        ...greedy, maxTokens: 1 + Math.floor(rand() * 24), batchTokens: 1 + Math.floor(rand() * 4),
        signal: ac.signal,
      }).then((r) => { settles++; return r; });
      const mode = rand();
      if (mode < 0.3) ac.abort();                              // before it starts
      else if (mode < 0.8) setTimeout(() => ac.abort(), rand() * 5);  // mid-way (or after)
      const r = await p;
      await new Promise((res) => setImmediate(res));
      if (settles !== 1) settledTwice++;
      counts[r.finishReason] = (counts[r.finishReason] || 0) + 1;
      assert.ok(r.finishReason === 'cancelled' || r.finishReason === 'length', r.finishReason);
    }
  } finally {
    await m.dispose();
  }
  console.log(`1000 cycles: ${JSON.stringify(counts)}`);
  assert.equal(settledTwice, 0);
  assert.ok(counts.cancelled >= 300 && counts.length >= 100, JSON.stringify(counts));
});

test('concurrent generates on two models and on one: all settle, outputs deterministic',
     { timeout: 300_000 }, async () => {
  const [a, b] = await Promise.all([Model.load(model(), { ctx: 256, threads: 1 }),
                                    Model.load(model(), { ctx: 256, threads: 1 })]);
  try {
    const jobs = [];
    for (let i = 0; i < 8; i++) {
      jobs.push(a.generate(`same prompt ${i % 2}`, { ...greedy, maxTokens: 12 }));
      jobs.push(b.generate(`same prompt ${i % 2}`, { ...greedy, maxTokens: 12 }));
    }
    const rs = await Promise.all(jobs);
    for (const r of rs) assert.equal(r.stats.nGen, 12);
    // Same prompt, greedy: the same text whichever model and queue position served it.
    for (let i = 1; i < rs.length; i++) {
      assert.equal(rs[i].text, rs[2 * (Math.floor(i / 2) % 2)].text, `job ${i}`);
    }
    assert.notEqual(rs[0].text, rs[2].text);
  } finally {
    await Promise.all([a.dispose(), b.dispose()]);
  }
});

test('dispose in the middle of stream(): the iteration ends, nothing after', { timeout: 120_000 },
     async () => {
  for (let round = 0; round < 20; round++) {
    const m = await Model.load(model(), { ctx: 512 });
    const s = m.stream('streaming', { ...greedy, maxTokens: 3000, batchTokens: 1 });
    let n = 0;
    let after = 0;
    let disposing = null;
    for await (const piece of s) {
      assert.equal(typeof piece, 'string');
      if (disposing) after++;
      if (++n === 1 + (round % 5)) disposing = m.dispose();
    }
    const r = await s.result;
    await disposing;
    assert.equal(r.finishReason, 'cancelled');
    assert.ok(after <= 64, 'batches already queued may drain, then the stream ends');
  }
});

test('a model garbage-collected without dispose() is freed safely', { timeout: 120_000 }, () => {
  // In a child with --expose-gc: load, generate, drop the handle, collect, load again, exit.
  const script = `
    const edgellm = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      for (let i = 0; i < 5; i++) {
        let m = await edgellm.Model.load(${JSON.stringify(model())}, { ctx: 128 });
        await m.generate('gc', { temperature: 0, maxTokens: 4 });
        m = null;
        global.gc();
        await new Promise((r) => setTimeout(r, 50));
      }
      // One left running at exit: the cleanup hook cancels and frees it.
      const last = await edgellm.Model.load(${JSON.stringify(model())}, { ctx: 256 });
      last.generate('exit while generating', { temperature: 0, maxTokens: 100000, ignoreEos: true });
      setTimeout(() => { console.log('ok'); process.exit(0); }, 100);
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', script], { encoding: 'utf8',
                                                                       timeout: 100_000 });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'ok');
  assert.equal(r.signal, null);
});

'use strict';
// Images through the bridge: a SmolVLM-256M-shape model with its projector (random weights),
// an image as a path, a Uint8Array and an ArrayBuffer giving the same text (the CLI's, which
// tests/multimodal_test.cc compares with llama.cpp's own mtmd path), the media stats, the
// encoded-media cache, and bad input.
// Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { Model } = require('..');
const { repo, cli, multimodal, model: synth } = require('../testutil/fixtures');

const image = path.join(repo, 'third_party', 'llama.cpp', 'tools', 'mtmd', 'test-1.jpeg');
const prompt = 'What is in the image?';

test('an image as a path, a Uint8Array or an ArrayBuffer: the CLI\'s text and the media stats',
     async () => {
  const { model, mmproj } = multimodal();
  const m = await Model.load(model, { mmprojPath: mmproj, imageMaxTokens: 64, threads: 2,
                                      ctx: 1024, warmup: false });
  try {
    assert.equal(m.info.vision, true);
    assert.equal(m.info.audio, false);
    assert.equal(m.info.mmprojPath, mmproj);
    const opts = { chat: true, temperature: 0, maxTokens: 6, ignoreEos: true };
    const a = await m.generate(prompt, { ...opts, images: [image] });
    assert.equal(a.stats.nMedia, 1);
    assert.equal(a.stats.nMediaTokens, 128);
    assert.ok(a.stats.mediaEncodeMs > 0);
    assert.ok(a.stats.nPrompt > 128);
    const bytes = new Uint8Array(fs.readFileSync(image));  // HarmonyOS hands out Uint8Arrays
    const b = await m.generate(prompt, { ...opts, images: [bytes] });
    assert.equal(b.text, a.text);
    assert.equal(b.stats.mediaChunksCached, 2, 'the same image again: taken from the cache');
    assert.equal(b.stats.mediaEncodeMs, 0);
    const c = await m.generate(prompt, { ...opts, images: [bytes.slice().buffer] });
    assert.equal(c.text, a.text);
    const ref = JSON.parse(execFileSync(cli, [
      'run', '-m', model, '--mmproj', mmproj, '--image', image, '--image-max-tokens', '64',
      '--chat', '-p', prompt, '-n', '6', '--temp', '0', '--ignore-eos', '--ctx', '1024',
      '--threads', '2', '--no-warmup', '--json', '-q'], { stdio: ['ignore', 'pipe', 'ignore'] }));
    assert.equal(a.text, ref.text);
  } finally {
    await m.dispose();
  }
});

test('planMemory counts the projector', async () => {
  const { model, mmproj } = multimodal();
  const { planMemory } = require('..');
  const alone = await planMemory(model, { ctx: 1024 });
  const pair = await planMemory(model, { ctx: 1024, mmprojPath: mmproj, imageMaxTokens: 64 });
  assert.equal(alone.projectorBytes, 0);
  assert.ok(pair.projectorBytes > fs.statSync(mmproj).size * 0.95, `${pair.projectorBytes}`);
  assert.equal(pair.totalBytes, alone.totalBytes + pair.projectorBytes);
});

test('bad media are clear errors; a model without a projector says so', async () => {
  const { model, mmproj } = multimodal();
  const m = await Model.load(model, { mmprojPath: mmproj, imageMaxTokens: 64, threads: 2,
                                      ctx: 1024, warmup: false });
  try {
    // Sync throw or rejection alike (async wrappers).
    await assert.rejects(async () => m.generate(prompt, { images: 'x.jpg' }),
                         /images must be an array/);
    await assert.rejects(async () => m.generate(prompt, { images: [42] }),
                         /must be a file path or a Uint8Array/);
    await assert.rejects(async () => m.generate(prompt, { images: [new Float32Array(4)] }),
                         /must be a Uint8Array/);
    await assert.rejects(m.generate(prompt, { images: ['/nonexistent/x.jpg'] }), /no such file/);
    await assert.rejects(m.generate(prompt, { images: [new Uint8Array([1, 2, 3, 4, 5])] }),
                         /neither an image/);
    // Still works.
    const ok = await m.generate(prompt, { images: [image], maxTokens: 2 });
    assert.equal(ok.stats.nMedia, 1);
  } finally {
    await m.dispose();
  }
  const plain = await Model.load(synth('tiny', 'Q8_0'), { threads: 2, warmup: false });
  try {
    assert.equal(plain.info.vision, false);
    await assert.rejects(plain.generate(prompt, { images: [image] }), /without a projector/);
  } finally {
    await plain.dispose();
  }
  await assert.rejects(Model.load(synth('tiny', 'Q8_0'), { mmprojPath: synth('tiny', 'Q8_0') }),
                       /not a projector/);
});

test('a conversation turn with a photo\'s bytes: later turns reuse it; setHistory takes media', async () => {
  const { model, mmproj } = multimodal();
  const m = await Model.load(model, { mmprojPath: mmproj, imageMaxTokens: 64, threads: 2,
                                      ctx: 1024, warmup: false });
  try {
    const c = await m.conversation();
    const bytes = new Uint8Array(fs.readFileSync(image));
    const opts = { temperature: 0, maxTokens: 3 };
    const first = await c.send('What is in this photo?', { ...opts, images: [bytes] });
    assert.equal(first.stats.nMedia, 1);
    assert.equal(first.stats.nMediaTokens, 128);
    const second = await c.send('And the colours?', opts);
    assert.equal(second.stats.nMedia, 1, 'the photo is still in the prompt');
    assert.ok(second.stats.nCached > 128, `reused ${second.stats.nCached}`);
    assert.equal(second.stats.mediaEncodeMs, 0);
    assert.equal(c.history[0].mediaCount, 1);
    assert.equal(c.history[2].mediaCount, undefined);

    // A history with an image as an ArrayBuffer (no Buffer on HarmonyOS), answered again.
    await c.setHistory([{ role: 'user', content: 'Describe it.', images: [bytes.slice().buffer] }]);
    const r = await c.regenerate(opts);
    assert.equal(r.stats.nMedia, 1);
    assert.equal(r.stats.mediaEncodeMs, 0, 'the same photo: its encoding is cached');
    await assert.rejects(c.setHistory([{ role: 'user', content: 'x', images: [7] }]),
                         /must be a file path or a Uint8Array/);
  } finally {
    await m.dispose();
  }
});

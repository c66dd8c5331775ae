'use strict';
// Conversations through the bridge against real libllama: KV reuse across turns, the same
// replies as the stateless history path, edits, a save that survives a process restart,
// dispose during a reply, and 1000 random cancels across conversations. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const edgellm = require('..');
const { model, scratch } = require('../testutil/fixtures');

const { Model } = edgellm;
// Every guess checked: the same greedy text run after run (docs/speculative.md).
const greedy = { temperature: 0, maxTokens: 12, speculative: { adaptive: false } };
const system = 'You are an assistant on a phone. 回答要简短。';
const turns = ['你好', 'What can you do offline?', '再说一遍，简短一点。'];

test('a conversation reuses its KV cache and answers as the stateless history path does', async () => {
  const m = await Model.load(model(), { ctx: 1024 });
  try {
    // keepSampledTokens off: each prompt is the rendered history tokenized, as the stateless
    // path tokenizes it, so the replies must be the same token for token.
    const chat = await m.conversation({ systemPrompt: system, keepSampledTokens: false });
    assert.equal(chat.systemPrompt, system);
    for (const [i, t] of turns.entries()) {
      const pieces = [];
      const r = await chat.send(t, { ...greedy, onToken: (p) => pieces.push(p) });
      assert.equal(pieces.join(''), r.text);
      assert.notEqual(r.finishReason, 'context_full');
      if (i > 0) {
        assert.ok(r.stats.nCached > r.stats.nPrompt, `turn ${i}: reused ${r.stats.nCached}, ` +
                  `prefilled ${r.stats.nPrompt}`);
      }
      // The same turn, stateless: the history passed in, a fresh cache.
      const history = chat.history.slice(0, -2);
      await m.releaseKv();
      const s = await m.generate(t, { ...greedy, systemPrompt: system, history });
      assert.equal(s.text, r.text, `turn ${i}`);
      assert.equal(s.stats.nCached, 0);
    }
    assert.equal(chat.history.length, 2 * turns.length);
    assert.deepEqual(chat.history[0], { role: 'user', content: turns[0] });

    const last = chat.history.at(-1).content;
    const again = await chat.regenerate(greedy);
    assert.equal(again.text, last);
    assert.ok(again.stats.nCached > 0);
    await chat.edit(0, '改过的问题');
    assert.equal(chat.history.length, 1);
    const edited = await chat.regenerate(greedy);
    assert.equal(chat.history.length, 2);
    assert.equal(chat.history[1].content, edited.text);
    await chat.truncate(0);
    assert.deepEqual(chat.history, []);
    await chat.setHistory([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'yo' },
                           { role: 'user', content: 'and?' }]);
    const answered = await chat.regenerate(greedy);
    assert.equal(chat.history.length, 4);
    assert.equal(chat.history[3].content, answered.text);
    await chat.reset();
    await assert.rejects(chat.regenerate(greedy), { code: 'ERR_FAILED_PRECONDITION' });
    await assert.rejects(chat.edit(5, 'x'), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(chat.setHistory([{ role: 1 }]), TypeError);

    // A stream gives the same reply.
    const chat2 = await m.conversation({ systemPrompt: system });
    const streamed = [];
    const st = chat2.stream(turns[0], greedy);
    for await (const piece of st) streamed.push(piece);
    const sr = await st.result;
    assert.equal(streamed.join(''), sr.text);
    await chat.dispose();
    await chat.dispose();
    await assert.rejects(chat.send('x'), { code: 'ERR_DISPOSED' });
    await chat2.dispose();
  } finally {
    await m.dispose();
  }
});

test('a model without a template needs chatmlFallback; overflow and keepSampledTokens are checked', async () => {
  const file = path.join(scratch('conv-base'), 'base.gguf');
  const { cli } = require('../testutil/fixtures');
  execFileSync(cli, ['synth', '--preset', 'tiny', '--type', 'Q8_0', '--no-chat-template', '-o',
                     file], { stdio: ['ignore', 'ignore', 'inherit'] });
  const m = await Model.load(file, { ctx: 256 });
  try {
    await assert.rejects(m.conversation(), { code: 'ERR_INVALID_ARGUMENT' });
    const c = await m.conversation({ chatmlFallback: true });
    const r = await c.send('hi', greedy);
    assert.ok(r.stats.nGen > 0);
    await assert.rejects(m.conversation({ overflow: 'sometimes' }), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(m.conversation({ overflow: 3 }), TypeError);
    await assert.rejects(m.conversation({ chatmlFallback: true, keepSampledTokens: 1 }), TypeError);
    // Keeping the sampled tokens prefills no more per turn than tokenizing the history again.
    const prefilled = {};
    for (const keep of [false, true]) {
      const k = await m.conversation({ chatmlFallback: true, keepSampledTokens: keep });
      prefilled[keep] = 0;
      for (const t of ['one', 'two', 'three', 'four']) {
        const s = await k.send(t, { ...greedy, maxTokens: 24 });
        prefilled[keep] += s.stats.nPrompt;
      }
    }
    assert.ok(prefilled[true] <= prefilled[false], JSON.stringify(prefilled));
  } finally {
    await m.dispose();
  }
});

// Runs a conversation step in a child process (a real restart), printing JSON.
function child(script, args) {
  const out = execFileSync(process.execPath, ['-e', script, ...args], {
    cwd: path.join(__dirname, '..'), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(out.trim().split('\n').at(-1));
}

test('a saved conversation continues in a new process with its KV cache', async () => {
  const file = path.join(scratch('conv-save'), 'chat.kv');
  const first = child(`
    const { Model } = require('.');
    (async () => {
      const [modelPath, file, system] = process.argv.slice(1);
      const m = await Model.load(modelPath, { ctx: 1024 });
      const c = await m.conversation({ systemPrompt: system });
      await c.send('你好', { temperature: 0, maxTokens: 12 });
      await c.send('What is kept on the device?', { temperature: 0, maxTokens: 12 });
      await c.save(file);
      const third = await c.send('离线能用吗？', { temperature: 0, maxTokens: 16 });
      console.log(JSON.stringify({ text: third.text }));
      process.exit(0);  // no dispose: the process just ends, as a killed app would
    })();`, [model(), file, system]);
  const second = child(`
    const { Model } = require('.');
    (async () => {
      const [modelPath, file] = process.argv.slice(1);
      const m = await Model.load(modelPath, { ctx: 1024 });
      const c = await m.restoreConversation(file);
      const third = await c.send('离线能用吗？', { temperature: 0, maxTokens: 16 });
      console.log(JSON.stringify({ text: third.text, info: c.restoreInfo, n: c.history.length,
                                   system: c.systemPrompt, cached: third.stats.nCached }));
      await m.dispose();
    })();`, [model(), file]);
  assert.equal(second.text, first.text);
  assert.equal(second.info.kvRestored, true, second.info.whyNot);
  assert.ok(second.info.nTokens > 20);
  assert.ok(second.cached >= second.info.nTokens / 2);
  assert.equal(second.n, 6);
  assert.equal(second.system, system);

  const m = await Model.load(model(), { ctx: 512 });  // other options: history only
  try {
    const c = await m.restoreConversation(file);
    assert.equal(c.restoreInfo.kvRestored, false);
    assert.match(c.restoreInfo.whyNot, /context/);
    assert.equal(c.history.length, 4);
    await assert.rejects(m.restoreConversation(file + '.missing'), { code: 'ERR_NOT_FOUND' });
  } finally {
    await m.dispose();
  }
});

test('dispose during a reply settles it and later calls reject', async () => {
  const m = await Model.load(model(), { ctx: 1024 });
  const c = await m.conversation({ systemPrompt: system });
  let pieces = 0;
  const running = c.send('Tell me a long story', {
    temperature: 0, maxTokens: 400, ignoreEos: true, batchTokens: 1,
    onToken: () => { pieces++; },
  });
  const queued = c.send('and another', greedy);
  await new Promise((r) => setTimeout(r, 50));
  await m.dispose();
  const r = await running;
  assert.equal(r.finishReason, 'cancelled');
  assert.equal((await queued).finishReason, 'cancelled');
  await assert.rejects(c.send('x', greedy), { code: 'ERR_DISPOSED' });
  await assert.rejects(c.save('/tmp/x.kv'), { code: 'ERR_DISPOSED' });
  await c.dispose();
  assert.ok(pieces >= 0);
});

test('1000 random cancels across three conversations: every promise settles, replies stay right',
     async () => {
  const m = await Model.load(model(), { ctx: 2048 });
  try {
    const convs = await Promise.all([0, 1, 2].map((k) =>
      m.conversation({ systemPrompt: `${system} #${k}` })));
    let seed = 12345;
    const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
    const settled = [];
    for (let i = 0; i < 1000; i++) {
      const c = convs[i % 3];
      const ac = new AbortController();
      const p = c.send(`q${i % 7}`, { temperature: 0, maxTokens: 6, signal: ac.signal });
      const when = rand();
      if (when < 0.3) ac.abort();
      else if (when < 0.8) setTimeout(() => ac.abort(), Math.floor(rand() * 4));
      settled.push(p.then((r) => r.finishReason, (e) => `error ${e.code}`));
      if (i % 50 === 49) {
        const reasons = await Promise.all(settled.splice(0));
        for (const r of reasons) assert.match(r, /^(stop|length|cancelled)$/);
        for (const c2 of convs) if (c2.history.length > 30) await c2.truncate(0);
      }
    }
    const reasons = await Promise.all(settled);
    for (const r of reasons) assert.match(r, /^(stop|length|cancelled)$/);
    // After the chaos each conversation still answers as a fresh one would.
    for (const [k, c] of convs.entries()) {
      await c.truncate(0);
      const r = await c.send('final question', greedy);
      const fresh = await m.conversation({ systemPrompt: `${system} #${k}` });
      await m.releaseKv();
      const f = await fresh.send('final question', greedy);
      assert.equal(r.text, f.text, `conversation ${k}`);
      await fresh.dispose();
    }
  } finally {
    await m.dispose();
  }
});

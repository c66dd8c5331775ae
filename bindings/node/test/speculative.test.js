'use strict';
// Speculative decoding through Node and `edgellm serve` (docs/speculative.md): the text is the
// one without it, the stats say what was guessed and kept, bad options are clear errors, and
// serve reports the guesses in usage (the official `openai` client) and in /metrics.
// Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const OpenAI = require('openai');
const edgellm = require('..');
const { repo, cli, model } = require('../testutil/fixtures');

const { Model } = edgellm;
const committed = path.join(repo, 'assets', 'edgellm-tiny-F32.gguf');
const schema = {
  type: 'object',
  properties: {
    intent: { enum: ['weather', 'alarm', 'music'] },
    city: { type: 'string', maxLength: 8 },
    days: { type: 'integer', minimum: 0, maximum: 9 },
    ok: { type: 'boolean' },
  },
  required: ['intent', 'city', 'days', 'ok'],
  additionalProperties: false,
};

test('speculation keeps the greedy text, and its stats add up', async () => {
  const m = await Model.load(committed, { ctx: 256, threads: 2 });
  try {
    const prompts = ['summary: Wang Fang will visit Chengdu on Friday and call Li Lei.',
                     'city: Zhang Wei flies to Hangzhou on Monday.', 'x=3; x=x+4; print(x)'];
    let kept = 0;
    for (const p of prompts) {
      const off = await m.generate(p, { chat: true, temperature: 0, maxTokens: 48, speculative: false });
      assert.equal(off.stats.specDrafted, 0, 'speculative: false guesses nothing');
      // Off: one decode per token after the first (the prefill gave it), and one more for
      // the end token unless max_tokens stopped it.
      assert.ok(off.stats.decodeCalls === off.stats.nGen || off.stats.decodeCalls === off.stats.nGen - 1,
                `off: ${off.stats.decodeCalls} decodes for ${off.stats.nGen} tokens`);
      for (const speculative of [true, { ngram: true, jump: false, maxDraft: 4 },
                                 { maxDraft: 16, adaptive: false }]) {
        const on = await m.generate(p, { chat: true, temperature: 0, maxTokens: 48, speculative });
        const where = `${p} ${JSON.stringify(speculative)}`;
        assert.equal(on.text, off.text, where);
        assert.equal(on.stats.nGen, off.stats.nGen, where);
        assert.ok(on.stats.specAccepted <= on.stats.specDrafted, where);
        assert.ok(on.stats.specForced <= on.stats.specAccepted, where);
        // Each kept guess is a token that needed no decode of its own.
        assert.ok(Math.abs(on.stats.decodeCalls + on.stats.specAccepted - on.stats.nGen) <= 1,
                  `${where}: ${JSON.stringify(on.stats)}`);
        kept += on.stats.specAccepted;
      }
    }
    // The committed model's answers are short and seldom repeat: guesses were checked (the
    // kept ones are asserted on the schema below, where the grammar forces them).
    assert.ok(kept >= 0);

    // A schema: jump-forward takes the keys and punctuation the grammar forces.
    const plain = await m.generate('Extract: weather in Paris', { jsonSchema: schema, temperature: 0, maxTokens: 80, speculative: false });
    const jump = await m.generate('Extract: weather in Paris', { jsonSchema: schema, temperature: 0, maxTokens: 80, speculative: { ngram: false, adaptive: false } });
    assert.equal(jump.text, plain.text);
    assert.ok(jump.stats.specForced > 0, `nothing forced in ${jump.text}`);
    assert.ok(jump.stats.decodeCalls < plain.stats.decodeCalls, 'jump-forward saved no decode');
    // jumpCommit: the forced text taken unchecked; the answer is still the schema's JSON.
    const commit = await m.generate('Extract: weather in Paris', { jsonSchema: schema, temperature: 0, maxTokens: 80, speculative: { ngram: false, jumpCommit: true } });
    if (plain.jsonState === 'complete') {
      assert.equal(commit.jsonState, 'complete', commit.text);
      assert.equal(typeof JSON.parse(commit.text), 'object');
    }
    assert.ok(commit.stats.specForced > 0, `nothing forced in ${commit.text}`);
    assert.ok(commit.stats.decodeCalls < plain.stats.decodeCalls, 'jumpCommit saved no decode');
    await assert.rejects(m.generate('hi', { speculative: { jumpCommit: 'yes' } }), /jumpCommit/);

    // Bad options are errors that name them; the model keeps working.
    await assert.rejects(m.generate('hi', { speculative: { maxDraft: 99 } }), /max_draft|maxDraft|16/);
    await assert.rejects(m.generate('hi', { speculative: 'yes' }), /speculative must be/);
    const after = await m.generate(prompts[0], { chat: true, maxTokens: 8, temperature: 0 });
    assert.ok(after.stats.nGen > 0);
  } finally {
    await m.dispose();
  }
});

test('a draft model guesses through loadModel({ draftPath }); another vocabulary is refused', async () => {
  // The committed model drafting for itself: the same tokenizer, guesses that agree.
  const plan = await edgellm.planMemory(committed, { ctx: 256, draftPath: committed });
  const alone = await edgellm.planMemory(committed, { ctx: 256 });
  assert.ok(plan.draftBytes > 0 && alone.draftBytes === 0, JSON.stringify(plan));
  assert.equal(plan.totalBytes, alone.totalBytes + plan.draftBytes);
  const m = await Model.load(committed, { ctx: 256, threads: 1, draftPath: committed });
  try {
    const p = '87加99等于多少？';
    const off = await m.generate(p, { chat: true, temperature: 0, maxTokens: 32, speculative: false });
    const on = await m.generate(p, { chat: true, temperature: 0, maxTokens: 32,
                                     speculative: { ngram: false, jump: false, draftPMin: 0, adaptive: false } });
    assert.equal(on.text, off.text);
    assert.ok(on.stats.specDraftDrafted > 0, JSON.stringify(on.stats));
    assert.ok(on.stats.specDraftAccepted <= on.stats.specDraftDrafted);
    assert.ok(on.stats.specDraftMs > 0);
    assert.equal(on.stats.specDraftDrafted, on.stats.specDrafted, 'the draft model alone guessed');
    await assert.rejects(m.generate(p, { speculative: { draftPMin: 2 } }), /draft_p_min/);
  } finally {
    await m.dispose();
  }
  await assert.rejects(Model.load(committed, { ctx: 256, draftPath: model() }), /vocabulary/);
  await assert.rejects(Model.load(committed, { ctx: 256, draftPath: '/nonexistent.gguf' }),
                       /draft model/);
});

function startServer(file, extra = []) {
  const p = spawn(cli, ['serve', '-m', file, '--port', '0', '--ctx', '512', '--threads', '2', ...extra],
                  { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: p.stdout });
    rl.once('line', (url) => resolve({ p, url }));
    p.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

// The /metrics counters as numbers.
async function metrics(url) {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^edgellm_(\w+) (\d+)$/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

test('serve reports speculation in usage and /metrics; a request can turn it off', async () => {
  const { p, url } = await startServer(model());
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none' });
    const messages = [{ role: 'user', content: 'Extract: weather in 上海, 3 days' }];
    const response_format = { type: 'json_schema', json_schema: { name: 'x', schema } };
    const before = await metrics(url);
    assert.equal(before.requests_total, 0);
    // Every guess checked (adaptive: false): the counts do not hang on this machine's costs.
    const on = await client.chat.completions.create({ model: 'x', messages, response_format, temperature: 0, max_tokens: 80, speculative: { adaptive: false } });
    const u = on.usage;
    assert.ok(u.speculative.forced > 0, JSON.stringify(u));
    assert.equal(u.completion_tokens_details.accepted_prediction_tokens, u.speculative.accepted);
    assert.equal(u.completion_tokens_details.rejected_prediction_tokens, u.speculative.drafted - u.speculative.accepted);
    assert.ok(u.speculative.decode_calls < u.completion_tokens - 1, JSON.stringify(u));

    // The same request with speculation off (llama-server-style extension field): same text.
    const off = await client.chat.completions.create({ model: 'x', messages, response_format, temperature: 0, max_tokens: 80, speculative: false });
    assert.equal(off.choices[0].message.content, on.choices[0].message.content);
    assert.equal(off.usage.speculative.drafted, 0);

    // Streamed, with usage at the end.
    const stream = await client.chat.completions.create({ model: 'x', messages, response_format, temperature: 0, max_tokens: 80, stream: true, stream_options: { include_usage: true }, speculative: { adaptive: false } });
    let text = '';
    let usage = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta?.content ?? '';
      usage = chunk.usage ?? usage;
    }
    assert.equal(text, on.choices[0].message.content);
    // The same text and guesses checked the same way.
    const v = usage.speculative;
    assert.ok(v.forced > 0 && v.accepted <= v.drafted, JSON.stringify(v));

    const after = await metrics(url);
    assert.equal(after.requests_total, 3);
    assert.equal(after.spec_drafted_total, u.speculative.drafted + v.drafted);
    assert.equal(after.spec_accepted_total, u.speculative.accepted + v.accepted);
    assert.equal(after.spec_forced_total, u.speculative.forced + v.forced);
    assert.equal(after.tokens_predicted_total, 3 * u.completion_tokens);
    assert.equal(after.decode_calls_total, u.speculative.decode_calls + v.decode_calls + off.usage.speculative.decode_calls);

    // A bad speculative field is a 400 that names it.
    const bad = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages, speculative: { max_draft: 99 } }),
    });
    assert.equal(bad.status, 400);
    assert.match((await bad.json()).error.message, /max_draft/);
  } finally {
    p.kill('SIGTERM');
  }
});

test('serve --spec off makes plain decode the default; --spec with a bad source fails at start', async () => {
  const { p, url } = await startServer(model(), ['--spec', 'off']);
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none' });
    const r = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], temperature: 0, max_tokens: 16 });
    assert.equal(r.usage.speculative.drafted, 0);
    assert.ok(r.usage.completion_tokens - r.usage.speculative.decode_calls <= 1);
  } finally {
    p.kill('SIGTERM');
  }
  await assert.rejects(startServer(model(), ['--spec', 'beam']), /spec/);
  await assert.rejects(startServer(model(), ['--spec', 'draft:nope.gguf']), /draft model.*not found/);
});

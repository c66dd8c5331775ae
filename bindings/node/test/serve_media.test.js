'use strict';
// Images through `edgellm serve --mmproj` with the official `openai` npm client on loopback:
// an image_url part with a data: URL gets a streamed answer and usage that counts the image's
// tokens; the next request (the history with that image) reuses its cells; a remote URL, a
// damaged image, too many images and a server without a projector are 400s that say why, and
// the server keeps serving. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');
const OpenAI = require('openai');
const { repo, cli, multimodal } = require('../testutil/fixtures');

const image = path.join(repo, 'third_party', 'llama.cpp', 'tools', 'mtmd', 'test-1.jpeg');
const dataUrl = `data:image/jpeg;base64,${fs.readFileSync(image).toString('base64')}`;

function startServer(args) {
  const p = spawn(cli, ['serve', '--port', '0', '--threads', '2', ...args],
                  { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: p.stdout });
    rl.once('line', (url) => resolve({ p, url, log: () => err }));
    p.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

const ask = (text, url = dataUrl) => ({
  role: 'user',
  content: [{ type: 'text', text }, { type: 'image_url', image_url: { url } }],
});

test('serve --mmproj: the openai client sends an image and streams the answer', async () => {
  const { model, mmproj } = multimodal();
  const { p, url } = await startServer(['-m', model, '--mmproj', mmproj, '--image-max-tokens', '64',
                                        '--ctx', '1024', '--max-media', '2']);
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const messages = [ask('What is in this picture?')];
    const stream = await client.chat.completions.create({
      model: 'x', messages, stream: true, stream_options: { include_usage: true },
      max_tokens: 6, temperature: 0,
    });
    let text = '';
    let usage = null;
    let finish = null;
    for await (const chunk of stream) {
      if (chunk.choices[0]) {
        text += chunk.choices[0].delta.content || '';
        finish = chunk.choices[0].finish_reason || finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    assert.ok(finish === 'stop' || finish === 'length', `finish ${finish}`);
    assert.ok(usage, 'no usage chunk');
    assert.equal(usage.prompt_tokens_details.media_tokens, 128);
    assert.ok(usage.prompt_tokens > 128);

    // The next turn sends the whole history, image included: its cells are reused.
    messages.push({ role: 'assistant', content: text }, { role: 'user', content: 'And the colours?' });
    const r = await client.chat.completions.create({ model: 'x', messages, max_tokens: 4, temperature: 0 });
    assert.ok(r.usage.prompt_tokens_details.cached_tokens > 128,
              `cached ${r.usage.prompt_tokens_details.cached_tokens} of ${r.usage.prompt_tokens}`);
    assert.equal(r.usage.prompt_tokens_details.media_tokens, 128);

    const refused = async (msgs, needle) => {
      await assert.rejects(client.chat.completions.create({ model: 'x', messages: msgs, max_tokens: 2 }),
                           (e) => { if (e.status === 400 && e.message.includes(needle)) return true; throw new Error(`${needle}: got ${e.status} ${e.message}`); });
    };
    await refused([ask('this?', 'https://example.com/cat.jpg')], 'does not fetch URLs');
    await refused([ask('this?', 'data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ')], 'neither an image');
    await refused([{ role: 'user', content: [
      { type: 'image_url', image_url: { url: dataUrl } }, { type: 'image_url', image_url: { url: dataUrl } },
      { type: 'image_url', image_url: { url: dataUrl } }] }], '--max-media');
    await refused([{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'ogg' } }] }],
                  "format 'ogg'");
    await refused([{ role: 'system', content: [{ type: 'image_url', image_url: { url: dataUrl } }] },
                   { role: 'user', content: 'hi' }], 'only user messages');

    // Still serving.
    const again = await client.chat.completions.create({ model: 'x', messages: [ask('Once more?')], max_tokens: 2 });
    assert.equal(again.usage.prompt_tokens_details.media_tokens, 128);
  } finally {
    p.kill('SIGTERM');
  }
});

test('serve without --mmproj answers an image part with a 400 naming --mmproj', async () => {
  const { model } = multimodal();
  const { p, url } = await startServer(['-m', model, '--ctx', '512']);
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    await assert.rejects(
      client.chat.completions.create({ model: 'x', messages: [ask('What is it?')], max_tokens: 2 }),
      (e) => e.status === 400 && e.message.includes('--mmproj'));
    const ok = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    assert.equal(ok.choices.length, 1);
  } finally {
    p.kill('SIGTERM');
  }
});

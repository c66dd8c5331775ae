'use strict';
// `edgellm serve` with constrained output, through the official `openai` npm client on
// loopback: response_format json_schema and json_object, streamed and not, answers that
// validate (ajv); bad and oversized schemas and grammars from a client are 400s that name the
// problem; the server keeps serving. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const Ajv = require('ajv');
const OpenAI = require('openai');
const { cli, model } = require('../testutil/fixtures');

const ajv = new Ajv({ strict: false });

// Starts `edgellm serve --port 0` and resolves with its URL (printed alone on stdout).
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

const schema = {
  type: 'object',
  properties: {
    intent: { enum: ['weather', 'alarm', 'music'] },
    city: { type: 'string', maxLength: 8 },
    n: { type: 'integer', minimum: 0, maximum: 9 },
  },
  required: ['intent', 'city', 'n'],
  additionalProperties: false,
};

test('serve answers response_format with JSON that validates, streamed and not', async () => {
  const { p, url } = await startServer(model());
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none' });
    const validate = ajv.compile(schema);
    const messages = [{ role: 'user', content: 'Extract: weather in 上海, 3 days' }];
    const response_format = { type: 'json_schema', json_schema: { name: 'intent', schema } };
    let complete = 0;
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({ model: 'x', messages, response_format, seed, temperature: 0.8, max_tokens: 80 });
      const c = r.choices[0];
      if (c.finish_reason === 'length') continue;
      assert.equal(c.finish_reason, 'stop');
      const j = JSON.parse(c.message.content);
      assert.ok(validate(j), `${c.message.content}: ${ajv.errorsText(validate.errors)}`);
      complete++;

      const stream = await client.chat.completions.create({ model: 'x', messages, response_format, seed, temperature: 0.8, max_tokens: 80, stream: true });
      let text = '';
      let finish = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(finish, 'stop');
      assert.equal(text, c.message.content, 'the same seed streams the same JSON');
    }
    assert.ok(complete > 0, 'no answer finished within 80 tokens');

    const obj = await client.chat.completions.create({ model: 'x', messages, response_format: { type: 'json_object' }, temperature: 0, max_tokens: 60 });
    if (obj.choices[0].finish_reason === 'stop') {
      const j = JSON.parse(obj.choices[0].message.content);
      assert.equal(typeof j, 'object');
      assert.ok(!Array.isArray(j) && j !== null);
    }

    // llama-server's grammar field.
    const g = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ messages, grammar: 'root ::= "ok" | "no"', max_tokens: 5 }),
    }).then((res) => res.json());
    assert.ok(['ok', 'no'].includes(g.choices[0].message.content), JSON.stringify(g));
  } finally {
    p.kill('SIGTERM');
  }
});

test('bad or oversized schemas and grammars from a client are 400s naming the problem', async () => {
  const { p, url } = await startServer(model(), ['--max-schema-bytes', '2048', '--max-schema-depth', '8', '--max-grammar-rules', '64']);
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const messages = [{ role: 'user', content: 'hi' }];
    const bad = async (body, pattern) => {
      for (const stream of [false, true]) {
        await assert.rejects(client.chat.completions.create({ model: 'x', messages, max_tokens: 4, stream, ...body }),
                             (e) => e.status === 400 && pattern.test(e.message), JSON.stringify(body).slice(0, 80));
      }
    };
    let deep = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'array', items: deep };
    const big = { enum: Array.from({ length: 400 }, (_, i) => `value${i}`) };
    const wide = { type: 'object', properties: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, { type: 'integer', minimum: i }])) };
    await bad({ response_format: { type: 'json_schema', json_schema: { name: 'd', schema: deep } } }, /max_depth/);
    await bad({ response_format: { type: 'json_schema', json_schema: { name: 'b', schema: big } } }, /--max-schema-bytes/);
    await bad({ response_format: { type: 'json_schema', json_schema: { name: 'w', schema: wide } } }, /max_rules/);
    await bad({ response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { $ref: '#/nope' } } } }, /cannot be turned into a grammar/);
    await bad({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } }, /json_schema.schema/);
    await bad({ response_format: { type: 'yaml' } }, /response_format.type/);
    await bad({ grammar: 'root ::= "a" root' }, /never end/);
    await bad({ grammar: 'root ::= [' }, /does not parse/);
    await bad({ grammar: 'root ::= "a"', response_format: { type: 'json_object' } }, /not both/);
    // Still serving.
    const ok = await client.chat.completions.create({ model: 'x', messages, max_tokens: 3, temperature: 0 });
    assert.equal(ok.choices.length, 1);
  } finally {
    p.kill('SIGTERM');
  }
});

// The official client's embeddings.create against `edgellm serve --embedding-model` (a chat
// model beside it): floats by default through base64 (the client's default encoding), in
// input order, the same vectors for the same text; a text over the model's 512 tokens is a
// 400 the client raises as BadRequestError.
test('serve answers the openai client\'s embeddings.create next to chat', async () => {
  const { p, url } = await startServer(model(), ['--embedding-model', model('minilm-l6', 'Q8_0')]);
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const input = ['the battery lasts two days', '端侧大模型在手机本地运行', 'the battery lasts two days'];
    const r = await client.embeddings.create({ model: 'minilm-l6-Q8_0', input });
    assert.equal(r.data.length, 3);
    assert.deepEqual(r.data.map((d) => d.index), [0, 1, 2]);
    assert.equal(r.data[0].embedding.length, 384);
    assert.ok(r.usage.prompt_tokens > 10, JSON.stringify(r.usage));
    const dot = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);
    assert.ok(Math.abs(dot(r.data[0].embedding, r.data[0].embedding) - 1) < 1e-4, 'normalized');
    assert.ok(dot(r.data[0].embedding, r.data[2].embedding) > 0.9999, 'same text, same vector');
    const floats = await client.embeddings.create({ model: 'm', input: input[1], encoding_format: 'float' });
    assert.ok(dot(floats.data[0].embedding, r.data[1].embedding) > 0.9999);
    await assert.rejects(client.embeddings.create({ model: 'm', input: 'word '.repeat(3000) }),
                         (e) => e.status === 400 && /more than the 512/.test(e.message));
    const models = await client.models.list();
    assert.deepEqual(models.data.map((m) => m.id).length, 2);
    // Chat still answers on the same server.
    const c = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: 0 });
    assert.ok(c.choices[0].message.content.length > 0);
  } finally {
    p.kill('SIGTERM');
  }
});

'use strict';
// Tool calls and reasoning through `edgellm serve` with the official `openai` npm client, on
// tiny synth models stamped with real chat templates (Qwen2.5-Instruct's <tool_call> format,
// DeepSeek-R1-Distill's <think>): calls whose arguments validate against the tool's schema
// (ajv), streamed and not; a `tool` message answered back gives a final reply; reasoning_content
// apart from the answer, streamed as its own delta; bad tools are 400s. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const Ajv = require('ajv');
const OpenAI = require('openai');
const { cli, model, modelWithTemplate } = require('../testutil/fixtures');

const ajv = new Ajv({ strict: false });

function startServer(file) {
  const p = spawn(cli, ['serve', '-m', file, '--port', '0', '--ctx', '1024', '--threads', '2'],
                  { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  p.stderr.on('data', (d) => { err += d; });
  return new Promise((resolve, reject) => {
    readline.createInterface({ input: p.stdout }).once('line', (url) => resolve({ p, url }));
    p.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
}

const weather = {
  type: 'object',
  properties: { city: { type: 'string', maxLength: 10 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
  required: ['city', 'days'],
  additionalProperties: false,
};
const alarm = {
  type: 'object',
  properties: { time: { type: 'string', pattern: '^[0-2][0-9]:[0-5][0-9]$' } },
  required: ['time'],
  additionalProperties: false,
};
const tools = [
  { type: 'function', function: { name: 'get_weather', description: 'Weather forecast for a city', parameters: weather } },
  { type: 'function', function: { name: 'set_alarm', description: 'Sets an alarm', parameters: alarm } },
];
const validators = { get_weather: ajv.compile(weather), set_alarm: ajv.compile(alarm) };

function checkCall(call, where) {
  assert.equal(call.type, 'function', where);
  assert.ok(call.id, where);
  const validate = validators[call.function.name];
  assert.ok(validate, `${where}: unknown tool ${call.function.name}`);
  const args = JSON.parse(call.function.arguments);
  assert.ok(validate(args), `${where}: ${call.function.arguments} ${ajv.errorsText(validate.errors)}`);
  return args;
}

test('tool calls through serve with the openai client: required, named, streamed, answered', async () => {
  const { p, url } = await startServer(modelWithTemplate('Qwen-Qwen2.5-7B-Instruct.jinja'));
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const messages = [{ role: 'user', content: '上海明天天气怎么样？' }];
    for (const seed of [1, 2, 3]) {
      const r = await client.chat.completions.create({ model: 'x', messages, tools, tool_choice: 'required', seed, temperature: 0.8, max_tokens: 160 });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(c));
      assert.equal(c.message.tool_calls.length, 1);
      checkCall(c.message.tool_calls[0], `seed ${seed}`);

      // Streamed: the call arrives as deltas that add up to a valid call.
      const stream = await client.chat.completions.create({ model: 'x', messages, tools, tool_choice: 'required', seed, temperature: 0.8, max_tokens: 160, stream: true });
      const calls = [];
      let finish = null;
      for await (const chunk of stream) {
        const d = chunk.choices[0]?.delta ?? {};
        for (const tc of d.tool_calls ?? []) {
          calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
          if (tc.id) calls[tc.index].id = tc.id;
          if (tc.function?.name) calls[tc.index].function.name += tc.function.name;
          if (tc.function?.arguments) calls[tc.index].function.arguments += tc.function.arguments;
        }
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      assert.equal(finish, 'tool_calls');
      assert.equal(calls.length, 1);
      checkCall(calls[0], `streamed seed ${seed}`);
    }

    // A named function: that one is called.
    const named = await client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'wake me at 7' }], tools, tool_choice: { type: 'function', function: { name: 'set_alarm' } }, seed: 4, max_tokens: 160 });
    assert.equal(named.choices[0].message.tool_calls[0].function.name, 'set_alarm');
    checkCall(named.choices[0].message.tool_calls[0], 'named');

    // The call answered with a tool message: a final reply, no call forced.
    const call = named.choices[0].message.tool_calls[0];
    const followUp = await client.chat.completions.create({
      model: 'x', tools, seed: 5, temperature: 1, max_tokens: 12,
      messages: [{ role: 'user', content: 'wake me at 7' },
                 { role: 'assistant', content: null, tool_calls: [call] },
                 { role: 'tool', tool_call_id: call.id, content: '{"ok": true, "time": "07:00"}' }],
    });
    const f = followUp.choices[0];
    assert.notEqual(f.finish_reason, 'tool_calls');
    assert.equal(typeof f.message.content, 'string');
    assert.ok(f.message.content.length > 0);
    // The tool's result is in the prompt the reply answers (rendered by the template).
    assert.ok(followUp.usage.prompt_tokens > named.usage.prompt_tokens + 10);

    // tool_choice none: a plain reply.
    const none = await client.chat.completions.create({ model: 'x', messages, tools, tool_choice: 'none', temperature: 0, max_tokens: 8 });
    assert.equal(none.choices[0].message.tool_calls, undefined);

    // Bad tools and tool_choice are 400s naming the problem.
    const bad = async (body, pattern) => {
      await assert.rejects(client.chat.completions.create({ model: 'x', messages, max_tokens: 4, ...body }),
                           (e) => e.status === 400 && pattern.test(e.message), JSON.stringify(body).slice(0, 80));
    };
    await bad({ tools: [{ type: 'function', function: { name: 'x', parameters: { type: 'number', minimum: 0 } } }] }, /tool "x".*integer ranges only/);
    await bad({ tools: [{ type: 'function', function: { parameters: {} } }] }, /needs/);
    await bad({ tools, tool_choice: 'sometimes' }, /tool_choice must be/);
    await bad({ tools, tool_choice: { type: 'function', function: { name: 'nope' } } }, /not one of the tools/);
    await bad({ messages: [{ role: 'tool', content: 'x' }] }, /tool_call_id/);
  } finally {
    p.kill('SIGTERM');
  }
});

test('compact JSON by default: required calls fit a small budget; a call cut by max_tokens stays out of content', async () => {
  // The tiny fixture's template knows no tools: the generic JSON format, whose whitespace the
  // converter left free (up to 20 characters at every separator) before json_whitespace.
  const { p, url } = await startServer(model('tiny'));
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const messages = [{ role: 'user', content: 'weather in Paris for 3 days?' }];
    const two = [tools[0]];
    let compactTokens = 0;
    let freeTokens = 0;
    for (let seed = 1; seed <= 8; ++seed) {
      const body = { model: 'x', messages, tools: two, tool_choice: 'required', seed, temperature: 0.8, max_tokens: 64 };
      const r = await client.chat.completions.create(body);
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'tool_calls', `seed ${seed}: ${JSON.stringify(c)}`);
      const args = c.message.tool_calls[0].function.arguments;
      assert.doesNotMatch(args, /\n|\t|  /, `seed ${seed}: compact arguments`);
      checkCall(c.message.tool_calls[0], `seed ${seed}`);
      compactTokens += r.usage.completion_tokens;
      const free = await client.chat.completions.create({ ...body, max_tokens: 256, json_whitespace: 'free' });
      freeTokens += free.usage.completion_tokens;
    }
    assert.ok(freeTokens > compactTokens, `free ${freeTokens} tokens, compact ${compactTokens}`);

    // Cut by max_tokens: finish_reason length, none of the call's JSON in content, the call's
    // prefix in tool_calls once its name is written.
    let named = 0;
    for (const max_tokens of [6, 18, 30]) {
      const r = await client.chat.completions.create({ model: 'x', messages, tools: two, tool_choice: 'required', seed: 3, max_tokens });
      const c = r.choices[0];
      assert.equal(c.finish_reason, 'length', JSON.stringify(c));
      assert.ok(!c.message.content, `max_tokens ${max_tokens}: content ${JSON.stringify(c.message.content)}`);
      for (const call of c.message.tool_calls ?? []) {
        assert.equal(call.function.name, 'get_weather');
        named += 1;
      }
    }
    assert.ok(named > 0, 'no cut call had got as far as its name');

    await assert.rejects(client.chat.completions.create({ model: 'x', messages, max_tokens: 4, json_whitespace: 'tabs' }),
                         (e) => e.status === 400 && /json_whitespace must be/.test(e.message));
  } finally {
    p.kill('SIGTERM');
  }
});

test('a reasoning model: reasoning_content apart from the answer, streamed as its own delta', async () => {
  const { p, url } = await startServer(modelWithTemplate('deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'));
  try {
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: 'none', maxRetries: 0 });
    const messages = [{ role: 'user', content: 'capital of France?' }];
    // A grammar scripts the model's output: thinking, the closing tag, the answer.
    const grammar = 'root ::= "let me think. 想一想" "</think>" "\\n\\nParis."';
    const r = await client.chat.completions.create({ model: 'x', messages, max_tokens: 40, grammar });
    assert.equal(r.choices[0].message.content, 'Paris.');
    assert.equal(r.choices[0].message.reasoning_content, 'let me think. 想一想');

    const stream = await client.chat.completions.create({ model: 'x', messages, max_tokens: 40, grammar, stream: true });
    let content = '';
    let reasoning = '';
    let order = '';
    for await (const chunk of stream) {
      const d = chunk.choices[0]?.delta ?? {};
      if (d.reasoning_content) { reasoning += d.reasoning_content; if (!order.endsWith('r')) order += 'r'; }
      if (d.content) { content += d.content; if (!order.endsWith('c')) order += 'c'; }
    }
    assert.equal(reasoning, 'let me think. 想一想');
    assert.equal(content, 'Paris.');
    assert.equal(order, 'rc', 'the reasoning streams before the answer');

    // reasoning_format none: left inline; hidden: dropped.
    const inline = await client.chat.completions.create({ model: 'x', messages, max_tokens: 40, grammar, reasoning_format: 'none' });
    assert.equal(inline.choices[0].message.content, 'let me think. 想一想</think>\n\nParis.');
    const hidden = await client.chat.completions.create({ model: 'x', messages, max_tokens: 40, grammar, reasoning_format: 'hidden' });
    assert.equal(hidden.choices[0].message.content, 'Paris.');
    assert.equal(hidden.choices[0].message.reasoning_content, undefined);

    // The history follows the template: the earlier turn's reasoning is not sent back.
    const again = await client.chat.completions.create({
      model: 'x', max_tokens: 40, grammar,
      messages: [...messages, { role: 'assistant', content: 'Paris.', reasoning_content: 'let me think. 想一想' },
                 { role: 'user', content: 'and of Italy?' }],
    });
    assert.equal(again.choices[0].message.content, 'Paris.');
    assert.ok(again.usage.prompt_tokens > r.usage.prompt_tokens);
  } finally {
    p.kill('SIGTERM');
  }
});

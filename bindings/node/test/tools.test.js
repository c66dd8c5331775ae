'use strict';
// Tool calls and reasoning through the Node API on tiny synth models stamped with real chat
// templates: generate({tools}) returns toolCalls whose arguments validate (ajv), a tool result
// in the history gets a final reply, a reasoning model's thinking comes apart (onReasoning,
// `reasoning`), also in a conversation, and bad tool options reject. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const Ajv = require('ajv');
const edgellm = require('..');
const { modelWithTemplate } = require('../testutil/fixtures');

const { Model } = edgellm;
const ajv = new Ajv({ strict: false });
const timer = {
  type: 'object',
  properties: { minutes: { type: 'integer', minimum: 1, maximum: 90 }, label: { type: 'string', maxLength: 8 } },
  required: ['minutes'],
  additionalProperties: false,
};
const tools = [{ name: 'start_timer', description: 'Starts a countdown', parameters: timer },
               { type: 'function', function: { name: 'call', parameters: { type: 'object', properties: { who: { enum: ['Alice', 'Bob'] } }, required: ['who'] } } }];

test('generate with tools: calls that validate, a tool result answered', async () => {
  const m = await Model.load(modelWithTemplate('Qwen-Qwen2.5-7B-Instruct.jinja'), { ctx: 1024, threads: 2 });
  try {
    const validate = ajv.compile(timer);
    for (const seed of [1, 2]) {
      const r = await m.generate('计时5分钟', { chat: true, tools, toolChoice: 'start_timer', seed, temperature: 0.8, maxTokens: 120 });
      assert.equal(r.finishReason, 'tool_calls', r.text);
      assert.equal(r.toolCalls.length, 1);
      const [call] = r.toolCalls;
      assert.equal(call.name, 'start_timer');
      assert.deepEqual(call.args, JSON.parse(call.arguments));
      assert.ok(validate(call.args), `${call.arguments}: ${ajv.errorsText(validate.errors)}`);
      assert.match(call.id, /^call_/);

      const answered = await m.generate('', {
        tools, seed, temperature: 1, maxTokens: 10,
        history: [{ role: 'user', content: '计时5分钟' },
                  { role: 'assistant', content: null, toolCalls: [call] },
                  { role: 'tool', toolCallId: call.id, name: call.name, content: '{"started": true}' }],
      });
      assert.notEqual(answered.finishReason, 'tool_calls');
      assert.equal(answered.toolCalls, undefined);
      assert.ok(answered.stats.nPrompt + answered.stats.nCached > r.stats.nPrompt + r.stats.nCached);
    }
    const req = await m.generate('call someone', { chat: true, tools, toolChoice: 'required', seed: 3, maxTokens: 120 });
    assert.equal(req.finishReason, 'tool_calls');
    assert.ok(['start_timer', 'call'].includes(req.toolCalls[0].name));

    await assert.rejects(m.generate('x', { chat: true, tools, toolChoice: 'nope' }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /not one of the tools/ });
    await assert.rejects(m.generate('x', { tools }), { code: 'ERR_INVALID_ARGUMENT', message: /chat/ });
    await assert.rejects(m.generate('x', { chat: true, tools, grammar: 'root ::= "a"' }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /not both|cannot be combined/ });
    await assert.rejects(m.generate('x', { chat: true, tools: [{ description: 'no name' }] }), TypeError);
    const chat = await m.conversation();
    await assert.rejects(chat.send('x', { tools }), { code: 'ERR_INVALID_ARGUMENT', message: /Conversation/ });
  } finally {
    await m.dispose();
  }
});

test('a reasoning model: onReasoning and reasoning apart from the answer, hide and inline', async () => {
  const m = await Model.load(modelWithTemplate('deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja'), { ctx: 1024, threads: 2 });
  try {
    const grammar = 'root ::= "先想一想。" "</think>" "\\n\\n答案是 42。"';
    const thinking = [];
    const answer = [];
    const r = await m.generate('6 乘 7？', { chat: true, grammar, onReasoning: (t) => thinking.push(t), onToken: (t) => answer.push(t) });
    assert.equal(r.reasoning, '先想一想。');
    assert.equal(r.text, '答案是 42。');
    assert.equal(thinking.join(''), r.reasoning);
    assert.equal(answer.join(''), r.text);
    const hidden = await m.generate('6 乘 7？', { chat: true, grammar, reasoning: 'hide' });
    assert.equal(hidden.text, '答案是 42。');
    assert.equal(hidden.reasoning, undefined);
    const inline = await m.generate('6 乘 7？', { chat: true, grammar, reasoning: 'inline' });
    assert.equal(inline.text, '先想一想。</think>\n\n答案是 42。');

    // A conversation keeps the answer in its history, with the reasoning beside it.
    const chat = await m.conversation();
    const c = await chat.send('6 乘 7？', { grammar });
    assert.equal(c.text, '答案是 42。');
    assert.equal(c.reasoning, '先想一想。');
    assert.equal(chat.history[1].content, '答案是 42。');
    assert.equal(chat.history[1].reasoning, '先想一想。');
    const c2 = await chat.send('再说一遍', { grammar });
    assert.equal(c2.text, '答案是 42。');
  } finally {
    await m.dispose();
  }
});

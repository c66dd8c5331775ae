'use strict';
// Constrained output through the bridge against real libllama: 25 JSON schemas x seeds x
// temperatures on a random-weights synth model (it knows nothing of JSON) and on the committed
// trained model (its own small vocabulary), every finished output checked by an independent
// validator (ajv); greedy determinism; the committed model's intent answer with an enum
// schema; GBNF; conversations; bad schemas. Run: node --test test/
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const Ajv = require('ajv');
const edgellm = require('..');
const { repo, model } = require('../testutil/fixtures');

const { Model } = edgellm;
const committed = path.join(repo, 'assets', 'edgellm-tiny-F32.gguf');
const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });

const name = { type: 'string', maxLength: 8 };
const schemas = {
  enum: { enum: ['weather', 'alarm', 'music', 'navigate', 'call', 'timer'] },
  boolean: { type: 'boolean' },
  null: { type: 'null' },
  integerRange: { type: 'integer', minimum: -20, maximum: 300 },
  exclusiveRange: { type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 },
  number: { type: 'number' },
  constNumber: { const: 42 },
  mixedEnum: { enum: [1, 'two', null, true] },
  shortString: { type: 'string', minLength: 2, maxLength: 6 },
  chineseEnum: { enum: ['上海', '北京', '深圳', 'München'] },
  escapes: { const: 'a "quoted" \\ back\nslash\t制表' },
  pattern: { type: 'string', pattern: '^[0-2][0-9]:[0-5][0-9]$' },
  anyOf: { anyOf: [{ type: 'integer', minimum: 0, maximum: 9 }, { type: 'boolean' }] },
  oneOfObjects: {
    oneOf: [
      { type: 'object', properties: { kind: { const: 'a' } }, required: ['kind'], additionalProperties: false },
      { type: 'object', properties: { kind: { const: 'b' }, n: { type: 'integer', minimum: 0, maximum: 5 } }, required: ['kind', 'n'], additionalProperties: false },
    ],
  },
  arrayBounds: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 99 }, minItems: 2, maxItems: 4 },
  tuple: { type: 'array', prefixItems: [{ type: 'boolean' }, { enum: ['x', 'y'] }] },
  nestedArrays: { type: 'array', items: { type: 'array', items: { type: 'boolean' }, maxItems: 2 }, maxItems: 2 },
  required: {
    type: 'object',
    properties: { intent: { enum: ['weather', 'timer'] }, city: name, minutes: { type: 'integer', minimum: 1, maximum: 60 } },
    required: ['intent', 'city'],
    additionalProperties: false,
  },
  optionalOnly: {
    type: 'object', properties: { a: { type: 'boolean' }, b: { type: 'null' } }, additionalProperties: false,
  },
  nested: {
    type: 'object',
    properties: {
      user: { type: 'object', properties: { name, age: { type: 'integer', minimum: 0, maximum: 120 } }, required: ['name', 'age'], additionalProperties: false },
      ok: { type: 'boolean' },
    },
    required: ['user', 'ok'],
    additionalProperties: false,
  },
  arrayOfObjects: {
    type: 'array',
    items: { type: 'object', properties: { id: { type: 'integer', minimum: 0, maximum: 9 }, tag: { enum: ['新', 'old'] } }, required: ['id', 'tag'], additionalProperties: false },
    minItems: 1,
    maxItems: 3,
  },
  refs: {
    $defs: { city: { enum: ['上海', 'Paris'] } },
    type: 'object',
    properties: { from: { $ref: '#/$defs/city' }, to: { $ref: '#/$defs/city' } },
    required: ['from', 'to'],
    additionalProperties: false,
  },
  allOf: {
    allOf: [
      { type: 'object', properties: { a: { type: 'integer', minimum: 0, maximum: 3 } }, required: ['a'] },
      { type: 'object', properties: { b: { type: 'boolean' } }, required: ['b'] },
    ],
  },
  anyObject: { type: 'object', properties: { k: { type: 'string', maxLength: 5 } }, required: ['k'] },
};

// One model: every schema x seeds x temperatures; each finished output must validate.
async function checkAll(file, seeds, temps) {
  const m = await Model.load(file, { ctx: 256, threads: 2 });
  const tally = { complete: 0, incomplete: 0 };
  try {
    for (const [key, schema] of Object.entries(schemas)) {
      const validate = ajv.compile(schema);
      for (const temperature of temps) {
        for (const seed of seeds) {
          const r = await m.generate('Answer in JSON:', { jsonSchema: schema, temperature, seed, maxTokens: 80 });
          const where = `${path.basename(file)} ${key} temp ${temperature} seed ${seed}: ${JSON.stringify(r.text)}`;
          if (r.finishReason === 'length') {
            assert.equal(r.jsonState, 'incomplete', where);
            assert.equal(r.json, undefined, where);
            tally.incomplete++;
            continue;
          }
          assert.equal(r.finishReason, 'stop', where);
          assert.equal(r.jsonState, 'complete', where);
          assert.deepEqual(r.json, JSON.parse(r.text), where);
          assert.ok(validate(r.json), `${where}\n${ajv.errorsText(validate.errors)}`);
          tally.complete++;
        }
      }
    }
  } finally {
    await m.dispose();
  }
  return tally;
}

test('25 schemas on a random-weights synth model: every finished output validates', async () => {
  assert.ok(Object.keys(schemas).length >= 20);
  const t = await checkAll(model(), [1, 2], [0.6, 1.2]);
  assert.ok(t.complete >= t.incomplete, `complete ${t.complete}, incomplete ${t.incomplete}`);
});

test('25 schemas on the committed trained model: every finished output validates', async () => {
  const t = await checkAll(committed, [3, 4], [0, 0.9]);
  assert.ok(t.complete >= t.incomplete, `complete ${t.complete}, incomplete ${t.incomplete}`);
});

test('greedy with a schema is deterministic; the intent labels as a grammar give the unconstrained label', async (t) => {
  const m = await Model.load(committed, { ctx: 256, threads: 2 });
  try {
    const labels = schemas.enum.enum;
    const prompts = ['intent: what is the weather in Paris tomorrow', 'intent: set an alarm for 7 am',
                     'intent: play some jazz music', '意图：导航到机场', '意图：计时5分钟',
                     'intent: wake me up at 6 tomorrow', '意图：明天上海会下雨吗'];
    const grammar = `root ::= ${labels.map((l) => `"${l}"`).join(' | ')}`;
    let schemaAgrees = 0;
    for (const p of prompts) {
      const free = await m.generate(p, { chat: true, temperature: 0, maxTokens: 8 });
      assert.ok(labels.includes(free.text), `${p}: the model answers ${free.text}`);
      // The six labels as a grammar: the greedy draw the grammar allows is the model's own.
      const g = await m.generate(p, { chat: true, temperature: 0, maxTokens: 8, grammar });
      assert.equal(g.text, free.text, p);
      // As a JSON enum: deterministic, one of the labels. The opening quote the schema forces
      // is outside what this 2.9M-parameter model was trained on, so its label can change.
      const a = await m.generate(p, { chat: true, temperature: 0, maxTokens: 8, jsonSchema: schemas.enum });
      const b = await m.generate(p, { chat: true, temperature: 0, maxTokens: 8, jsonSchema: schemas.enum });
      assert.equal(a.text, b.text, p);
      assert.equal(a.jsonState, 'complete', p);
      assert.ok(labels.includes(a.json), `${p}: ${a.text}`);
      if (a.json === free.text) schemaAgrees++;
    }
    t.diagnostic(`JSON enum agrees with the free label on ${schemaAgrees} of ${prompts.length} prompts`);
  } finally {
    await m.dispose();
  }
});

test('a GBNF grammar, a conversation with a schema, and bad input', async () => {
  const m = await Model.load(model(), { ctx: 512, threads: 2 });
  try {
    const g = await m.generate('x', { grammar: 'root ::= ("是" | "否") "。"', temperature: 1, seed: 9 });
    assert.ok(g.text === '是。' || g.text === '否。', g.text);
    assert.equal(g.jsonState, undefined);
    assert.ok(g.stats.grammarMs > 0);

    const chat = await m.conversation();
    const schema = { type: 'object', properties: { n: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['n'], additionalProperties: false };
    for (const turn of ['one', 'two']) {
      const r = await chat.send(turn, { jsonSchema: JSON.stringify(schema), temperature: 0.8, seed: 1, maxTokens: 40 });
      if (r.jsonState === 'complete') assert.ok(ajv.validate(schema, r.json), r.text);
      else assert.equal(r.finishReason, 'length');
    }
    const cut = await m.generate('x', { jsonSchema: { type: 'array', items: { type: 'boolean' }, minItems: 30 }, maxTokens: 3 });
    assert.equal(cut.finishReason, 'length');
    assert.equal(cut.jsonState, 'incomplete');
    assert.equal(cut.json, undefined);

    await assert.rejects(m.generate('x', { jsonSchema: '{"type": ' }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /not valid JSON/ });
    await assert.rejects(m.generate('x', { jsonSchema: { $ref: '#/$defs/none' } }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /cannot be turned into a grammar/ });
    await assert.rejects(m.generate('x', { grammar: 'root ::= "a" root' }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /never end/ });
    await assert.rejects(m.generate('x', { grammar: 'root ::= undefined-rule' }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /undefined-rule/ });
    await assert.rejects(m.generate('x', { grammar: 'root ::= "a"', jsonSchema: {} }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /not both/ });
    await assert.rejects(m.generate('x', { grammar: 42 }), TypeError);
    await assert.rejects(m.generate('x', { jsonSchema: { type: 'number', minimum: 0, maximum: 1 } }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /`minimum`.*integer ranges only/ });
    await assert.rejects(m.generate('x', { jsonSchema: { type: 'array', uniqueItems: true } }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /`uniqueItems` at \/, which the grammar cannot enforce/ });
    await assert.rejects(m.generate('x', { jsonSchema: { properties: { a: { not: {} } } } }),
                         { code: 'ERR_INVALID_ARGUMENT', message: /`not` at \/properties\/a/ });
    const after = await m.generate('x', { temperature: 0, maxTokens: 3, ignoreEos: true });
    assert.equal(after.stats.nGen, 3);
  } finally {
    await m.dispose();
  }
});

test('jsonWhitespace: none writes no whitespace, free may; a bad value is a TypeError', async () => {
  const m = await Model.load(model(), { ctx: 512, threads: 2 });
  try {
    const jsonSchema = { type: 'object', properties: { a: { type: 'array', items: name, maxItems: 3 }, b: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['a', 'b'], additionalProperties: false };
    let free = 0;
    for (const seed of [1, 2, 3, 4]) {
      const none = await m.generate('json:', { jsonSchema, jsonWhitespace: 'none', seed, temperature: 1, maxTokens: 120 });
      if (none.jsonState === 'complete') {
        // Outside strings: no whitespace at all.
        assert.doesNotMatch(none.text.replace(/"(?:[^"\\]|\\.)*"/g, '""'), /\s/, none.text);
      }
      const loose = await m.generate('json:', { jsonSchema, jsonWhitespace: 'free', seed, temperature: 1, maxTokens: 120 });
      free += /\s/.test(loose.text.replace(/"(?:[^"\\]|\\.)*"/g, '""')) ? 1 : 0;
    }
    assert.ok(free > 0, 'free whitespace never showed up in 4 seeds');
    await assert.rejects(m.generate('json:', { jsonSchema, jsonWhitespace: 'tabs' }),
                         (e) => e.code === 'ERR_INVALID_ARG_VALUE' && /jsonWhitespace must be/.test(e.message));
  } finally {
    await m.dispose();
  }
});

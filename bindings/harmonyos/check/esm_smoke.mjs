#!/usr/bin/env node
// Runs the generated edgellm HAR (bindings/harmonyos/edgellm/Index.js, ES modules) in Node, with
// the specifier 'libedgellm.so' resolved to the real Node addon (bindings/node/build/edgellm.node,
// or $EDGELLM_NODE_ADDON), next to bindings/node/index.js (CommonJS) on the same addon:
//   1. the ES module's named exports, its default export and index.js's module.exports are the
//      same names and the same kinds of value (the default export's values are the named ones);
//   2. with a model (build/bin/edgellm synth, cached in build/node-fixtures/): Model.load +
//      generate, a stream read to the end, a stream left early, and a conversation turn through
//      the ES module give what the same calls give through index.js.
// The HAR is imported with globalThis.AbortController and performance hidden, so its stand-ins
// for them (gen_js.mjs step 6) are what runs.
// Exit 0: all passed; 1: a difference; 2: cannot run; 77 (ctest skip): the addon or the CLI is
// not built, so only step 1 ran, against a stub addon.
import { register, createRequire } from 'node:module';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');
const har = join(here, '..', 'edgellm');
const require = createRequire(import.meta.url);

const failures = [];
const show = (t) => JSON.stringify(typeof t === 'string' && t.length > 60 ? `${t.slice(0, 60)}...` : t);
const expect = (ok, what) => {
  process.stdout.write(`${ok ? 'ok  ' : 'FAIL'} ${what}\n`);
  if (!ok) failures.push(what);
};

let addon = process.env.EDGELLM_NODE_ADDON || join(repo, 'bindings', 'node', 'build', 'edgellm.node');
const real = existsSync(addon);
if (!real) {
  // Only the export lists can be compared: both layers read native.version at load time and
  // everything else lazily, so any object will do.
  addon = join(mkdtempSync(join(tmpdir(), 'edgellm-esm-smoke-')), 'stub.js');
  writeFileSync(addon, `module.exports = new Proxy({}, { get: (t, k) => k === 'version'
  ? { edgellm: 'stub', llama: 'stub', napi: 8 }
  : typeof k === 'string' && k !== 'then' ? function stub() { throw new Error('stub addon'); } : undefined });\n`);
  process.stdout.write(`note: ${process.env.EDGELLM_NODE_ADDON || 'bindings/node/build/edgellm.node'} ` +
                       'is not built: comparing exports against a stub addon, no model run\n');
}
process.env.EDGELLM_NODE_ADDON = addon;  // index.js loads the same file

// The module 'libedgellm.so' on HarmonyOS; here the addon, through require (a .node file is
// CommonJS to Node). The HAR's .js files are ES modules (no package.json "type" says so).
const nativeSource = `import { createRequire } from 'node:module';
export default createRequire(${JSON.stringify(addon)})(${JSON.stringify(addon)});\n`;
const hooks = `
const HAR = ${JSON.stringify(pathToFileURL(har).href + '/')};
const NATIVE = ${JSON.stringify('data:text/javascript,' + encodeURIComponent(nativeSource))};
export async function resolve(specifier, context, next) {
  if (specifier === 'libedgellm.so') return { url: NATIVE, shortCircuit: true };
  return next(specifier, context);
}
export async function load(url, context, next) {
  if (url.startsWith(HAR) && url.endsWith('.js')) {
    const r = await next(url, { ...context, format: 'module' });
    return { ...r, format: 'module', shortCircuit: true };
  }
  return next(url, context);
}
`;
register('data:text/javascript,' + encodeURIComponent(hooks));

const indexJs = join(har, 'Index.js');
if (!existsSync(indexJs)) {
  process.stderr.write('esm_smoke: bindings/harmonyos/edgellm/Index.js is missing: run ' +
                       'node bindings/harmonyos/gen.mjs\n');
  process.exit(2);
}
const cjs = require(join(repo, 'bindings', 'node', 'index.js'));

const hidden = {};
for (const g of ['AbortController', 'performance']) {
  hidden[g] = Object.getOwnPropertyDescriptor(globalThis, g);
  delete globalThis[g];
  if (g in globalThis) { process.stderr.write(`esm_smoke: cannot hide ${g}\n`); process.exit(2); }
}
let esm;
try {
  esm = await import(pathToFileURL(indexJs).href);
} finally {
  for (const [g, d] of Object.entries(hidden)) if (d) Object.defineProperty(globalThis, g, d);
}

// 1. The exports.
const cjsNames = Object.keys(cjs).sort();
const named = Object.keys(esm).filter((k) => k !== 'default').sort();
const defaults = Object.keys(esm.default ?? {}).sort();
expect(isDeepStrictEqual(named, cjsNames),
       `named exports = index.js exports (${named.length}: ${named.join(', ')})`);
if (!isDeepStrictEqual(named, cjsNames)) process.stdout.write(`     index.js: ${cjsNames.join(', ')}\n`);
expect(isDeepStrictEqual(defaults, cjsNames), 'default export keys = index.js exports');
expect(named.every((k) => esm.default[k] === esm[k]), 'default export values are the named exports');
expect(cjsNames.every((k) => typeof esm[k] === typeof cjs[k]), 'each export has the kind of value index.js has');
expect(isDeepStrictEqual(esm.version, cjs.version), `version ${JSON.stringify(esm.version)}`);

// The AbortController stand-in, without a model: textStream's own controller when the consumer
// leaves early, and the caller's signal passed on.
{
  const { textStream } = await import(pathToFileURL(join(har, 'stream.js')).href);
  const fake = (onSignal) => (o) => new Promise((resolve) => {
    o.onToken('a');
    o.onToken('b');
    onSignal(o.signal);
    const done = () => resolve({ text: 'a', finishReason: 'cancelled', reason: o.signal.reason });
    if (o.signal.aborted) done();
    else o.signal.addEventListener('abort', done, { once: true });
  });
  let inner = null;
  const s = textStream(fake((sig) => { inner = sig; }), {});
  let first = null;
  for await (const t of s) { first = t; break; }
  const r = await s.result;
  expect(first === 'a' && r.finishReason === 'cancelled' && inner.aborted &&
         !(inner instanceof AbortSignal),
         'stream.js without a global AbortController: leaving early aborts through the stand-in');
  const outer = new AbortController();
  const s2 = textStream(fake(() => outer.abort(new Error('stop'))), { signal: outer.signal });
  const r2 = await s2.result;
  expect(r2.finishReason === 'cancelled' && r2.reason?.message === 'stop',
         "the caller's signal aborts the stand-in's, with its reason");
}

let status = failures.length ? 1 : 0;
if (!real) {
  process.exit(status || 77);
}

// 2. A model through both layers.
let file = process.env.EDGELLM_SMOKE_MODEL;
if (!file) {
  const fixtures = require(join(repo, 'bindings', 'node', 'testutil', 'fixtures.js'));
  if (!existsSync(fixtures.cli)) {
    process.stdout.write(`note: ${fixtures.cli} is not built: no model run\n`);
    process.exit(status || 77);
  }
  file = fixtures.model();
}

async function run(api) {
  const m = await api.Model.load(file, { threads: 1 });
  try {
    const opts = { maxTokens: 8, temperature: 0 };
    const r = await m.generate('hello', opts);
    let streamed = '';
    const s = m.stream('hello', opts);
    for await (const t of s) streamed += t;
    const sr = await s.result;
    // Left after the first batch: the stream's own AbortController cancels the rest.
    let first = null;
    const early = m.stream('hello', { ...opts, maxTokens: 32, batchTokens: 1 });
    for await (const t of early) { first = t; break; }
    const er = await early.result;
    const c = await m.conversation({ systemPrompt: 'Be brief.' });
    const cr = await c.send('hi', opts);
    const history = c.history;
    await c.dispose();
    return { text: r.text, finishReason: r.finishReason, nGen: r.stats.nGen, streamed,
             streamText: sr.text, first, early: er.finishReason, earlyText: er.text,
             turn: cr.text, history };
  } finally {
    await m.dispose();
  }
}

try {
  const viaEsm = await run(esm);
  const viaCjs = await run(cjs);
  expect(viaEsm.text === viaCjs.text && viaEsm.finishReason === viaCjs.finishReason &&
         viaEsm.nGen === viaCjs.nGen,
         `generate('hello', {maxTokens: 8, temperature: 0}): ${show(viaEsm.text)} ` +
         `(${viaEsm.nGen} tokens, ${viaEsm.finishReason}) = index.js's ${show(viaCjs.text)} ` +
         `(${viaCjs.nGen} tokens, ${viaCjs.finishReason})`);
  expect(viaEsm.streamed === viaEsm.text && viaEsm.streamText === viaEsm.text,
         'stream(): the batches joined and the result are the generated text');
  expect(viaEsm.first !== null && viaEsm.earlyText.startsWith(viaEsm.first) &&
         ['cancelled', 'length', 'stop'].includes(viaEsm.early),
         `stream() left after the first batch settles (${viaEsm.early}, ` +
         `${show(viaEsm.earlyText)})`);
  expect(viaEsm.turn === viaCjs.turn && isDeepStrictEqual(viaEsm.history, viaCjs.history),
         `conversation().send('hi'): ${show(viaEsm.turn)} = index.js's ${show(viaCjs.turn)}, same history`);
} catch (err) {
  expect(false, `model run: ${err.stack || err}`);
}
status = failures.length ? 1 : 0;
process.stdout.write(status ? `esm_smoke: ${failures.length} failure(s)\n` : 'esm_smoke: passed\n');
process.exit(status);

// End to end: a real packed model served over HTTP, web/server.mjs over the real addon, and the
// page driven in headless Chromium (pull with progress, streamed chat, cancel, screenshot, an
// image attached to a turn of a model loaded with its projector).
// Run: node --test web/test/   (needs build/bin/edgellm, the addon, /usr/bin/chromium)
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const edgellm = path.join(root, 'build/bin/edgellm');
const addonFile = path.join(root, 'bindings/node/build/edgellm.node');
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const kSlow = 240_000;  // this machine is small and shared: generous waits everywhere

let tmp, modelServer, demoServer, browser, page, demoUrl, manifestUrl;
const extraServers = [];  // the servers a test starts for itself, stopped after all

// Spawns a long-running command and resolves with the first match of `pattern` in its output.
function startProcess(cmd, args, pattern) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${cmd} did not start in 60 s:\n${out}`)),
                             60_000);
    const onData = (d) => {
      out += d;
      const m = out.match(pattern);
      if (m) { clearTimeout(timer); resolve(m); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${cmd} exited ${code}:\n${out}`));
    });
  });
  return { child, ready, output: () => out };
}

// SIGTERM, then waits for the exit (SIGKILL after 10 s) so the temp folder is free to remove.
async function stop(proc) {
  const { child } = proc ?? {};
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function postJson(p, body, base = demoUrl) {
  const res = await fetch(new URL(p, base), {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

before(async () => {
  const needed = [[edgellm, 'build it: bash scripts/setup.sh'],
                  [addonFile, 'build it: bash scripts/setup.sh'],
                  [chromiumPath, 'apt-get install chromium, or set CHROMIUM=/path/to/chromium']];
  for (const [file, fix] of needed) assert.ok(existsSync(file), `${file} is missing: ${fix}`);
  tmp = await mkdtemp(path.join(os.tmpdir(), 'edgellm-demo-'));
  const gguf = path.join(tmp, 'tiny.gguf');
  execFileSync(edgellm, ['synth', '--preset', 'tiny', '--type', 'Q8_0', '-o', gguf],
               { stdio: 'pipe' });
  execFileSync(edgellm, ['pack', gguf, '--id', 'tiny', '--version', '1', '--chunk', '1MiB',
                         '-o', path.join(tmp, 'pkg')], { stdio: 'pipe' });
  execFileSync(edgellm, ['synth', '--preset', 'minilm-l6', '--type', 'Q8_0', '-o',
                         path.join(tmp, 'minilm.gguf')], { stdio: 'pipe' });
  await mkdir(path.join(tmp, 'models'));
  await writeFile(path.join(tmp, 'models', 'broken.gguf'), 'GGUF but not really a model\n');

  modelServer = startProcess(edgellm, ['serve-models', path.join(tmp, 'pkg'), '--port', '0'],
                             /on (http:\/\/[^/\s]+)\//);
  manifestUrl = `${(await modelServer.ready)[1]}/manifest.json`;
  demoServer = startProcess(process.execPath, [
    path.join(root, 'web/server.mjs'), '--port', '0', '--models', path.join(tmp, 'models'),
    '--store', path.join(tmp, 'store'), '--manifest', manifestUrl,
    '--embedding-model', path.join(tmp, 'minilm.gguf')], /edgellm demo on (http:\S+)/);
  demoUrl = (await demoServer.ready)[1];

  browser = await chromium.launch({
    executablePath: chromiumPath, headless: true,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-gpu',
           '--disable-dev-shm-usage'],
  });
  page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  page.setDefaultTimeout(kSlow);
  page.on('pageerror', (err) => console.error('page error:', err));
}, { timeout: kSlow });

after(async () => {
  await browser?.close();
  await Promise.all([stop(demoServer), stop(modelServer), ...extraServers.map(stop)]);
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test('API answers bad input with clear JSON errors', async () => {
  let r = await postJson('/api/chat', { prompt: 'hi' });
  assert.equal(r.status, 409);
  assert.match(r.body.error, /no model is loaded/);
  r = await postJson('/api/load', {});
  assert.equal(r.status, 400);
  assert.match(r.body.error, /missing "path"/);
  r = await postJson('/api/load', { path: path.join(tmp, 'models', 'absent.gguf') });
  assert.equal(r.status, 404);
  assert.match(r.body.error, /no model .*absent\.gguf/);
  r = await postJson('/api/load', { path: path.join(tmp, 'models', 'broken.gguf') });
  assert.equal(r.status, 422);
  assert.match(r.body.error, /cannot load .*broken\.gguf: \S/);
  r = await postJson('/api/load', { manifestUrl: 'ftp://example/manifest.json' });
  assert.equal(r.status, 400);
  r = await postJson('/api/load', { manifestUrl: 'http://127.0.0.1:1/manifest.json' });
  assert.equal(r.status, 502);
  assert.match(r.body.error, /cannot pull http:\/\/127\.0\.0\.1:1\/manifest\.json: \S/);
  r = await postJson('/api/chat', '{not json');
  assert.equal(r.status, 400);
  assert.match(r.body.error, /not a JSON object/);
});

test('page pulls the model with staged progress: download, engine, warm-up, ready',
     { timeout: kSlow }, async (t) => {
  await page.goto(demoUrl);
  await page.waitForSelector('body[data-ready][data-events="open"]');
  assert.equal(await page.inputValue('#manifest-url'), manifestUrl);
  assert.match(await page.textContent('#device'), /RAM.*free of/);
  // Record every text the stage line shows, as it changes.
  await page.evaluate(() => {
    window.stageTexts = [];
    const stage = document.getElementById('stage');
    new MutationObserver(() => window.stageTexts.push(stage.textContent))
      .observe(stage, { childList: true, characterData: true, subtree: true });
  });
  await page.click('#pull-btn');
  await page.waitForSelector('body[data-load="done"]');
  assert.equal(await page.textContent('#load-error'), '');
  assert.equal(await page.getAttribute('#stage', 'data-stage'), 'ready');
  const stages = await page.$$eval('#stage-log li', (items) => items.map((li) => li.dataset.stage));
  assert.deepEqual(stages, ['download', 'initializing engine', 'warming up', 'ready']);
  const texts = await page.evaluate(() => window.stageTexts);
  // The downloader reports about every 200 ms, so a fast loopback may show only a few.
  const downloads = texts.filter((s) => /^download \d+% .* ETA/.test(s));
  t.diagnostic(`download updates shown: ${downloads.map((s) => s.split(' ')[1]).join(' ')}`);
  assert.ok(downloads.some((s) => s.startsWith('download 100%')), texts.join(' | '));
  assert.match(await page.textContent('#model-select'), /store: tiny@1/);
  assert.match(await page.textContent('#plan'), /total/);
  await page.waitForFunction(() => /^\d+$/.test(document.getElementById('live-threads').textContent));
  assert.match(await page.textContent('#live-rss'), /\d+(\.\d)? [MG]iB/);
});

// Starts a chat from the page and samples the answer's length in the page every 5 ms.
async function startChat(maxTokens) {
  await page.fill('#prompt', '用一句话介绍端侧大模型。');  // sending clears the prompt
  await page.fill('#max-tokens', String(maxTokens));
  await page.waitForSelector('#send-btn:not([disabled])');
  await page.evaluate(() => {
    window.lengths = [];
    const answer = document.getElementById('answer');
    const timer = setInterval(() => {
      window.lengths.push(answer.textContent.length);
      if (document.body.dataset.chat === 'done') clearInterval(timer);
    }, 5);
  });
  await page.click('#send-btn');
}

test('answer streams progressively and ends with ms/token stats', { timeout: kSlow }, async (t) => {
  await startChat(200);
  await page.waitForSelector('body[data-chat="done"]');
  const lengths = await page.evaluate(() => window.lengths);
  const final = (await page.textContent('#answer')).length;
  const partial = [...new Set(lengths)].filter((n) => n > 0 && n < final);
  assert.ok(partial.length >= 3, `expected several partial lengths before ${final}, saw ${partial}`);
  for (let i = 1; i < partial.length; i++) assert.ok(partial[i] > partial[i - 1], 'the answer shrank');
  assert.equal(await page.textContent('#chat-error'), '');
  assert.match(await page.textContent('#stat-finish'), /^(length|stop|context_full)$/);
  assert.match(await page.textContent('#stat-ms-per-token'), /^\d+\.\d ms\/token$/);
  assert.match(await page.textContent('#stat-ttft'), /^\d+(\.\d+)? ms$/);
  t.diagnostic(`${partial.length} partial lengths before ${final} characters; ` +
               `${await page.textContent('#stat-ms-per-token')}, ` +
               `TTFT ${await page.textContent('#stat-ttft')}`);
  await page.waitForFunction(() => document.getElementById('live-busy').textContent === 'idle');
  const shots = path.join(root, 'build/screenshots');
  await mkdir(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, 'demo.png'), fullPage: true });
});

test('Cancel stops a long generation', { timeout: kSlow }, async (t) => {
  await startChat(2000);
  await page.waitForFunction(() => document.getElementById('answer').textContent.length > 300);
  await page.click('#cancel-btn');
  await page.waitForSelector('body[data-chat="done"]');
  assert.equal(await page.textContent('#stat-finish'), 'cancelled');
  const nGen = Number((await page.textContent('#stat-ngen')).split(' ')[0]);
  assert.ok(nGen > 0 && nGen < 2000, `cancelled after ${nGen} tokens`);
  t.diagnostic(`cancelled after ${nGen} of 2000 tokens`);
  const length = (await page.textContent('#answer')).length;
  await page.waitForTimeout(1500);
  assert.equal((await page.textContent('#answer')).length, length, 'text kept growing after Cancel');
  const status = await (await fetch(new URL('/api/status', demoUrl))).json();
  assert.equal(status.busy, false);
  assert.equal(status.generating, false);
});

test('switching models disposes the old one and cancels its generation',
     { timeout: kSlow }, async () => {
  const chat = await fetch(new URL('/api/chat', demoUrl), {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'count to a thousand', maxTokens: 2000 }),
  });
  assert.equal(chat.status, 200);
  const body = chat.body.getReader();
  const decoder = new TextDecoder();
  let events = decoder.decode((await body.read()).value, { stream: true });  // it started
  const local = path.join(tmp, 'models', 'tiny-local.gguf');
  await copyFile(path.join(tmp, 'tiny.gguf'), local);
  const r = await postJson('/api/load', { path: local });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.info.path, local);
  for (let c = await body.read(); !c.done; c = await body.read()) {
    events += decoder.decode(c.value, { stream: true });
  }
  const done = JSON.parse(events.match(/event: done\ndata: (.*)\n/)[1]);
  assert.equal(done.finishReason, 'cancelled');
  const status = await (await fetch(new URL('/api/status', demoUrl))).json();
  assert.equal(status.model.path, local);
});

// Sends one turn from the page with Enter and waits for its reply.
async function turn(prompt, maxTokens = 48, p = page) {
  await p.fill('#prompt', prompt);
  await p.fill('#max-tokens', String(maxTokens));
  await p.waitForSelector('#send-btn:not([disabled])');
  await p.press('#prompt', 'Enter');
  assert.equal(await p.inputValue('#prompt'), '', 'sending clears the prompt');
  await p.waitForSelector('body[data-chat="done"]');
  assert.equal(await p.textContent('#chat-error'), '');
}

const historyOf = (p = page) => p.$$eval('#history li', (items) => items.map((li) => ({
  role: li.dataset.role, text: li.firstChild?.textContent ?? '',
  media: li.querySelector('.media-tag')?.textContent ?? '',
  stats: li.querySelector('.turn-stats')?.textContent ?? '' })));

test('edgellm\'s own model holds a three-turn chat with reuse, and a reload resumes it',
     { timeout: kSlow }, async (t) => {
  const options = await page.$$eval('#model-select option', (o) => o.map((x) => x.value));
  const bundled = options.find((v) => v.endsWith('assets/edgellm-tiny-F32.gguf'));
  assert.ok(bundled, `the trained model is offered: ${options}`);
  assert.equal(options[0], bundled, 'and first, the default');
  await page.selectOption('#model-select', bundled);
  await page.click('#load-btn');
  await page.waitForSelector('body[data-load="done"]');
  assert.equal(await page.textContent('#load-error'), '');
  await page.click('#reset-btn');
  await page.waitForFunction(() => document.querySelectorAll('#history li').length === 0);

  await turn('用一句话介绍端侧大模型。');
  await turn('Say it in English.');
  await turn('意图：明天上海会下雨吗');
  const h = await historyOf();
  assert.deepEqual(h.map((m) => m.role), ['user', 'assistant', 'user', 'assistant', 'user',
                                          'assistant']);
  assert.match(h[1].text, /端侧/);
  assert.equal(h[5].text, 'weather');
  for (const k of [3, 5]) {
    const m = h[k].stats.match(/TTFT [\d.]+ ms · reused (\d+) of (\d+) prompt tokens/);
    assert.ok(m, h[k].stats);
    assert.ok(Number(m[1]) > 0 && Number(m[1]) < Number(m[2]), h[k].stats);
  }
  t.diagnostic(`turn 3: ${h[5].stats}`);
  const shots = path.join(root, 'build/screenshots');
  await mkdir(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, 'demo-chat.png'), fullPage: true });

  // A reload shows the same conversation (the server saved it) and the next turn reuses it.
  await page.reload();
  await page.waitForSelector('body[data-ready]');
  await page.waitForFunction(() => document.querySelectorAll('#history li').length === 6);
  const again = await historyOf();
  assert.deepEqual(again.map((m) => m.text), h.map((m) => m.text));
  assert.equal(again[5].stats, h[5].stats);
  assert.ok(existsSync(path.join(tmp, 'store', 'demo-conversation.kv')));
  await turn('city: Wang Fang flies to Chengdu on Friday.');
  const four = await historyOf();
  assert.equal(four.length, 8);
  assert.equal(four[7].text, 'Chengdu');
  assert.match(four[7].stats, /reused [1-9]\d* of/);
});

test('Documents: add a text file, answer from it, and show each cited chunk with what found it',
     { timeout: kSlow }, async (t) => {
  let r = await postJson('/api/docs/add', { name: 'empty.txt', text: ' ' });
  assert.equal(r.status, 400);
  assert.match(r.body.error, /empty/);
  r = await postJson('/api/chat', { prompt: 'hi', docs: 'sideways' });
  assert.equal(r.status, 400);
  assert.match(r.body.error, /"docs" must be one of hybrid, lexical, vector/);

  // The Qwen-vocabulary synth (its context has room for the chunks; the bundled model has 256).
  await page.selectOption('#model-select', path.join(tmp, 'models', 'tiny-local.gguf'));
  await page.click('#load-btn');
  await page.waitForSelector('body[data-load="done"]');
  await page.click('#reset-btn');
  await page.waitForFunction(() => document.querySelectorAll('#history li').length === 0);
  await page.waitForFunction(() => /minilm/.test(document.getElementById('docs-status').textContent));
  // The fixture's vectors are random: the panel must say so rather than pretend.
  assert.match(await page.textContent('#docs-warning'), /random weights.*Only lexical/);
  const notes = path.join(tmp, 'notes.txt');
  await writeFile(notes, 'The lighthouse keeper counted ships every night. He kept the ledger ' +
    'in a drawer on the second floor, bound in green leather. In winter the harbour froze. ' +
    '灯塔看守人每晚数船。账本放在二楼的抽屉里。冬天港口结冰。\n');
  await page.setInputFiles('#doc-file', notes);
  await page.click('#doc-add-btn');
  await page.waitForSelector('#doc-list li[data-source="notes.txt"]');
  assert.equal(await page.textContent('#docs-error'), '');
  assert.match(await page.textContent('#docs-status'), /1 document\(s\), [1-9]\d* chunks/);

  await page.check('#docs-use');
  await page.selectOption('#docs-mode', 'hybrid');
  await turn('Where is the ledger?', 24);
  const sources = await page.$$eval('#sources li', (items) => items.map((li) => ({
    foundBy: li.dataset.foundBy, text: li.textContent })));
  assert.ok(sources.length >= 1, 'the reply cites chunks');
  t.diagnostic(sources.map((s) => s.text.split('\n')[0]).join(' | '));
  const byWords = sources.filter((s) => s.foundBy === 'lexical' || s.foundBy === 'both');
  assert.ok(byWords.length >= 1 && /ledger/.test(byWords[0].text), JSON.stringify(sources));
  for (const s of sources) {
    assert.match(s.text, /^\[\d\] notes\.txt · bytes \d+-\d+ · found by (lexical|vector|both) \(/);
  }
  const h = await historyOf();
  assert.deepEqual(h.map((m) => m.role), ['user', 'assistant']);
  assert.match(h[0].text, /^Where is the ledger\?  \(with \d cited chunks\)$/);
  assert.notEqual(await page.textContent('#stat-finish'), 'context_full');
  const shots = path.join(root, 'build/screenshots');
  await mkdir(shots, { recursive: true });
  await page.screenshot({ path: path.join(shots, 'demo-docs.png'), fullPage: true });

  // Chinese words match too (the index's CJK pairs), found by words, not by the random vectors.
  await page.selectOption('#docs-mode', 'lexical');
  await turn('账本在哪里？', 16);
  const zh = await page.$$eval('#sources li', (items) => items.map((li) => li.dataset.foundBy));
  assert.deepEqual([...new Set(zh)], ['lexical']);

  await page.click('#doc-list li[data-source="notes.txt"] button');
  await page.waitForFunction(() => document.querySelectorAll('#doc-list li').length === 0);
  assert.equal(await page.isDisabled('#docs-use'), true);
});

// Starts another web/server.mjs with `args` and opens a page on it.
async function startDemo(args) {
  const proc = startProcess(process.execPath, [path.join(root, 'web/server.mjs'), '--port', '0',
                                               ...args], /edgellm demo on (http:\S+)/);
  extraServers.push(proc);
  const url = (await proc.ready)[1];
  const p = await browser.newPage({ viewport: { width: 1200, height: 1000 } });
  p.setDefaultTimeout(kSlow);
  p.on('pageerror', (err) => console.error('page error:', err));
  await p.goto(url);
  await p.waitForSelector('body[data-ready]');
  return { proc, url, page: p };
}

test('a missing default models/ folder is no error; --mmproj is the picked projector',
     { timeout: kSlow }, async (t) => {
  const { multimodal } = createRequire(import.meta.url)(
    path.join(root, 'bindings/node/testutil/fixtures.js'));
  const { mmproj } = multimodal();
  const demo = await startDemo(['--store', path.join(tmp, 'store-default'), '--mmproj', mmproj,
                                '--threads', '2']);
  try {
    const p = demo.page;
    assert.equal(await p.textContent('#models-error'), '');
    assert.equal(await p.isVisible('#models-error'), false);
    const note = await p.textContent('#models-note');
    if (!existsSync(path.join(root, 'models'))) {
      assert.match(note, /no models\/ folder .*--models DIR/);
    }
    t.diagnostic(`note: ${note || '(none: models/ exists)'}`);
    const models = await p.$$eval('#model-select option', (o) => o.map((x) => x.value));
    assert.ok(models[0].endsWith('assets/edgellm-tiny-F32.gguf'), String(models));
    assert.equal(await p.inputValue('#projector-select'), mmproj);
    // No model loaded yet: Attach is off and says what it needs.
    assert.equal(await p.isDisabled('#attach-btn'), true);
    assert.match(await p.getAttribute('#attach-btn', 'title'), /projector/);
  } finally {
    await demo.page.close();
    await stop(demo.proc);
  }
});

test('an image attached to a turn: streamed answer with its media stats, then reused',
     { timeout: kSlow }, async (t) => {
  const started = performance.now();
  const { multimodal } = createRequire(import.meta.url)(
    path.join(root, 'bindings/node/testutil/fixtures.js'));
  const fixture = multimodal();  // SmolVLM-256M's shapes, random weights, and its projector
  const dir = path.join(tmp, 'mm-models');
  await mkdir(dir);
  const modelFile = path.join(dir, path.basename(fixture.model));
  const mmprojFile = path.join(dir, path.basename(fixture.mmproj));
  await symlink(fixture.model, modelFile);
  await symlink(fixture.mmproj, mmprojFile);
  const demo = await startDemo(['--models', dir, '--store', path.join(tmp, 'store-mm'),
                                '--threads', '2', '--image-max-tokens', '64']);
  const p = demo.page;
  try {
    // The projector is offered as a projector, not as a chat model.
    const models = await p.$$eval('#model-select option', (o) => o.map((x) => x.value));
    assert.ok(models.includes(modelFile), String(models));
    assert.ok(!models.some((m) => /mmproj/.test(m)), String(models));
    const projectors = await p.$$eval('#projector-select option', (o) => o.map((x) => x.value));
    assert.deepEqual(projectors, ['', mmprojFile]);

    // Loaded without a projector: Attach is off, and its tooltip says to pick one.
    await p.selectOption('#model-select', modelFile);
    await p.click('#load-btn');
    await p.waitForSelector('body[data-load="done"]');
    assert.equal(await p.textContent('#load-error'), '');
    assert.equal(await p.isDisabled('#attach-btn'), true);
    assert.match(await p.getAttribute('#attach-btn', 'title'), /without a projector: pick one/);
    const photo = (type) => ({ prompt: 'What is it?', maxTokens: 1,
                               media: [{ name: 'x', type, data: 'AAAA' }] });
    let r = await postJson('/api/chat', photo('image/jpeg'), demo.url);
    assert.equal(r.status, 409);
    assert.match(r.body.error, /loaded without a projector: pick one under Projector/);

    await p.selectOption('#projector-select', mmprojFile);
    await p.click('#load-btn');
    await p.waitForSelector('body[data-load="done"]');
    assert.equal(await p.textContent('#load-error'), '');
    await p.waitForSelector('#attach-btn:not([disabled])');
    r = await postJson('/api/chat', photo('audio/wav'), demo.url);
    assert.equal(r.status, 400);
    assert.match(r.body.error, /takes images only/);
    r = await postJson('/api/chat', photo('text/plain'), demo.url);
    assert.equal(r.status, 400);
    assert.match(r.body.error, /attach an image \(image\/\*\) or an audio clip/);
    // Greedy decoding of this random-weights pair picks end-of-text at once after an image
    // (the distribution is flat; sampled, it rarely does): sample at the default temperature
    // and generate past end-of-text, 4 tokens.
    await p.check('#ignore-eos');
    await p.fill('#max-tokens', '4');

    // Shift+Enter is a new line, not a send.
    await p.fill('#prompt', 'What is in');
    await p.press('#prompt', 'Shift+Enter');
    assert.equal(await p.inputValue('#prompt'), 'What is in\n');
    assert.equal(await p.$$eval('#history li', (l) => l.length), 0);

    // Bytes that are no image: the usual error, the turn not taken, prompt and file kept.
    await p.setInputFiles('#attach-file', { name: 'broken.jpg', mimeType: 'image/jpeg',
                                            buffer: Buffer.from('not a JPEG at all') });
    await p.waitForSelector('#attachment:not([hidden])');
    assert.match(await p.textContent('#attach-name'), /^broken\.jpg \(17 B\)$/);
    await p.fill('#prompt', 'What is in this photo?');
    await p.press('#prompt', 'Enter');
    await p.waitForSelector('body[data-chat="done"]');
    assert.match(await p.textContent('#chat-error'), /cannot use the attached broken\.jpg: .*neither an image/);
    assert.equal(await p.$$eval('#history li', (l) => l.length), 0);
    assert.equal(await p.inputValue('#prompt'), 'What is in this photo?');
    await p.click('#attach-remove');
    assert.equal(await p.isHidden('#attachment'), true);

    // The photo: attached, sent with Enter, streamed, with its media stats.
    const image = path.join(root, 'third_party/llama.cpp/tools/mtmd/test-1.jpeg');
    await p.setInputFiles('#attach-file', image);
    await p.waitForSelector('#attachment:not([hidden])');
    assert.match(await p.textContent('#attach-name'), /^test-1\.jpeg \(\d+\.\d KiB\)$/);
    await p.evaluate(() => {
      window.lengths = [];
      const answer = document.getElementById('answer');
      new MutationObserver(() => window.lengths.push(answer.textContent.length))
        .observe(answer, { childList: true, characterData: true, subtree: true });
    });
    const t0 = performance.now();
    await p.press('#prompt', 'Enter');
    assert.equal(await p.inputValue('#prompt'), '', 'sending clears the prompt');
    assert.equal(await p.isHidden('#attachment'), true, 'and the attachment');
    await p.waitForSelector('body[data-chat="done"]');
    const firstMs = performance.now() - t0;
    assert.equal(await p.textContent('#chat-error'), '');
    const answer = await p.textContent('#answer');
    assert.ok(answer.length > 0, 'an answer streamed');
    assert.ok((await p.evaluate(() => window.lengths)).some((n) => n > 0));
    assert.match(await p.textContent('#stat-ngen'), /^4 \(prompt \d+\)$/);
    const media1 = await p.textContent('#stat-media');
    assert.match(media1, /^image: 128 tokens, encode \d+\.\d s$/);
    let h = await historyOf(p);
    assert.deepEqual(h.map((m) => m.role), ['user', 'assistant']);
    assert.equal(h[0].text, 'What is in this photo?');
    assert.equal(h[0].media, '1 attachment');
    assert.match(h[1].stats, /· image: 128 tokens, encode \d+\.\d s/);

    // The next turn, no image: the photo's cells are reused, nothing encoded again.
    const t1 = performance.now();
    await turn('And the colours?', 4, p);
    const secondMs = performance.now() - t1;
    assert.equal(await p.textContent('#stat-media'), 'image: 128 tokens, reused');
    h = await historyOf(p);
    assert.deepEqual(h.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
    assert.equal(h[2].media, '');
    const m = h[3].stats.match(/reused (\d+) of (\d+) prompt tokens · image: 128 tokens, reused$/);
    assert.ok(m && Number(m[1]) > 128, h[3].stats);
    t.diagnostic(`turn 1: ${media1}, ${(firstMs / 1000).toFixed(1)} s; turn 2: ` +
                 `${h[3].stats}, ${(secondMs / 1000).toFixed(1)} s; whole test ` +
                 `${((performance.now() - started) / 1000).toFixed(1)} s`);
    const shots = path.join(root, 'build/screenshots');
    await mkdir(shots, { recursive: true });
    await p.screenshot({ path: path.join(shots, 'demo-media.png'), fullPage: true });
  } finally {
    await p.close();
    await stop(demo.proc);
  }
});

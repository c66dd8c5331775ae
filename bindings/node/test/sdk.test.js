'use strict';
// The rest of the SDK from JS, against real libllama and real processes: LoRA adapters (equal
// to the CLI's output), the model store's ensure/verify/remove (a real pull from a real HTTP
// server), and Runtime routing with cloud fallback streaming from a local `edgellm serve`.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const edgellm = require('..');
const { cli, model, scratch } = require('../testutil/fixtures');

const { Model, Runtime } = edgellm;

function cliText(args) {
  return JSON.parse(execFileSync(cli, ['run', ...args, '--temp', '0', '--threads', '2', '--ctx',
                                       '256', '--json', '-q'])).text;
}

test('LoRA load/apply/scale/remove from JS equals the CLI with --lora', { timeout: 120_000 },
     async () => {
  const file = model();
  const dir = scratch('lora');
  const adapterFile = path.join(dir, 'adapter.gguf');
  execFileSync(cli, ['synth', '--preset', 'tiny', '--lora', '--rank', '4', '--alpha', '8',
                     '--seed', '3', '-o', adapterFile], { stdio: 'ignore' });
  const args = ['-m', file, '-p', 'adapt me', '-n', '16'];
  const base = cliText(args);
  const withLora = cliText([...args, '--lora', adapterFile]);
  const half = cliText([...args, '--lora', adapterFile, '--lora-scale', '0.5']);
  assert.notEqual(withLora, base, 'the random adapter changes the output');

  const m = await Model.load(file, { threads: 2, ctx: 256 });
  try {
    const g = () => m.generate('adapt me', { temperature: 0, maxTokens: 16 }).then((r) => r.text);
    assert.equal(await g(), base);
    const a = await m.loadLora(adapterFile);
    assert.equal(a.path, adapterFile);
    assert.equal(a.info.rank, 4);
    assert.ok(a.info.nPairs > 0);
    assert.equal(await g(), base, 'loaded but not applied');
    await m.setLora(a);
    assert.equal(await g(), withLora);
    await m.setLora(a, 0.5);
    assert.equal(await g(), half);
    await m.clearLora();
    assert.equal(await g(), base, 'cleared: the base model exactly');
    await m.setLora(a);
    // Memory pressure unloads the model; the adapter comes back with it.
    await edgellm.setMemoryLevel(2);
    const r = await m.generate('adapt me', { temperature: 0, maxTokens: 16 });
    assert.equal(r.stats.reloaded, true);
    assert.equal(r.text, withLora);
    await m.removeLora(a);
    assert.equal(await g(), base);
    await assert.rejects(m.setLora(a), { code: 'ERR_NOT_FOUND' });
    await assert.rejects(m.setLora({ id: 1 }), TypeError);
    await assert.rejects(m.setLora(a, 'x'), TypeError);
    await assert.rejects(m.loadLora(path.join(dir, 'missing.gguf')), { code: 'ERR_NOT_FOUND' });
    await assert.rejects(m.loadLora(file), (err) => err.code === 'ERR_INVALID_ARGUMENT' ||
                                                     err.code === 'ERR_CORRUPT_DATA');
  } finally {
    await m.dispose();
  }
});

// `edgellm serve` / `serve-models` on loopback, port 0: resolves with the URL it prints.
async function startProcess(args) {
  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  let timer;
  const url = await new Promise((resolve, reject) => {
    const look = (d) => {
      log += d;
      const m = log.match(/https?:\/\/127\.0\.0\.1:\d+/);
      if (m) resolve(m[0]);
    };
    child.stdout.on('data', look);
    child.stderr.on('data', look);
    child.on('exit', (code) => reject(new Error(`${args[0]} exited ${code}: ${log}`)));
    timer = setTimeout(() => reject(new Error(`${args[0]} did not start: ${log}`)), 30_000);
  }).finally(() => clearTimeout(timer));
  return { url, stop: () => new Promise((r) => { child.once('exit', r); child.kill('SIGTERM'); }),
           log: () => log };
}

test('the store from JS: pull, ensure (upgrade needed?), verify, remove', { timeout: 120_000 },
     async () => {
  const file = model();
  const dir = scratch('store');
  const pkg1 = path.join(dir, 'pkg1');
  const pkg2 = path.join(dir, 'pkg2');
  for (const [out, version] of [[pkg1, '1'], [pkg2, '2']]) {
    execFileSync(cli, ['pack', file, '-o', out, '--id', 'tiny', '--version', version],
                 { stdio: 'ignore' });
  }
  const store = path.join(dir, 'store');
  const server = await startProcess(['serve-models', dir, '--port', '0']);
  try {
    assert.deepEqual(await edgellm.ensureModel(store, 'tiny', 1),
                     { installed: false, activeVersion: 0, upgradeNeeded: true, path: '' });
    await edgellm.pull(`${server.url}/pkg1/manifest.json`, { store });
    const e1 = await edgellm.ensureModel(store, 'tiny', 2);
    assert.equal(e1.installed, true);
    assert.equal(e1.activeVersion, 1);
    assert.equal(e1.upgradeNeeded, true, 'v2 required, v1 active');
    assert.ok(fs.existsSync(e1.path), 'serve the old one meanwhile');
    await edgellm.pull(`${server.url}/pkg2/manifest.json`, { store });
    const e2 = await edgellm.ensureModel(store, 'tiny', 2);
    assert.deepEqual([e2.activeVersion, e2.upgradeNeeded], [2, false]);
    await edgellm.verifyModel(store, 'tiny');
    await edgellm.verifyModel(store, 'tiny', 1);
    // A flipped byte in the installed file is found by verify.
    const fd = fs.openSync(e2.path, 'r+');
    const b = Buffer.alloc(1);
    fs.readSync(fd, b, 0, 1, 4096);
    b[0] ^= 0xff;
    fs.writeSync(fd, b, 0, 1, 4096);
    fs.closeSync(fd);
    await assert.rejects(edgellm.verifyModel(store, 'tiny', 2), { code: 'ERR_CORRUPT_DATA' });
    await edgellm.removeModel(store, 'tiny', 1);
    assert.deepEqual((await edgellm.listModels(store)).map((x) => x.version), [2]);
    await edgellm.removeModel(store, 'tiny');
    assert.deepEqual(await edgellm.listModels(store), []);
    await assert.rejects(edgellm.verifyModel(store, 'tiny'), { code: 'ERR_NOT_FOUND' });
    await assert.rejects(edgellm.ensureModel(store, 'tiny', 0), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(edgellm.ensureModel(store, 'tiny'), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(edgellm.verifyModel(store, 'tiny', -3), { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(edgellm.removeModel(42, 'tiny'), TypeError);
  } finally {
    await server.stop();
  }
});

test('Runtime: on-device when it fits, the cloud (a local edgellm serve) when it does not, ' +
     'fallback on a damaged model, refusal under privacy', { timeout: 180_000 }, async () => {
  const file = model();
  const serve = await startProcess(['serve', '-m', file, '--port', '0', '--ctx', '512']);
  const greedy = { temperature: 0, maxTokens: 12, chat: true };
  try {
    const m = await Model.load(file, { threads: 2, ctx: 512 });
    const reference = (await m.generate('hello', greedy)).text;
    await m.dispose();
    const base = { modelPath: file, ctx: 512, preferOnDevice: true,
                   cloud: { baseUrl: serve.url, maxRetries: 0 } };

    const routes = [];
    const local = await Runtime.create({ ...base, onRoute: (e) => routes.push(e) });
    assert.equal(local.decision.route, 'on-device');
    let streamed = '';
    const r1 = await local.generate('hello', { ...greedy, onToken: (t) => { streamed += t; } });
    assert.deepEqual([r1.route, r1.fellBack, r1.text, streamed], ['on-device', false, reference,
                                                                  reference]);
    assert.deepEqual(routes.map((e) => e.route), ['on-device']);
    await local.dispose();

    // 64 MiB of RAM: the model does not fit; the cloud serves the same model, streamed.
    const small = await Runtime.create({ ...base, ramBytes: 64 * 2 ** 20 });
    assert.equal(small.decision.route, 'cloud');
    assert.equal(small.decision.localPossible, false);
    const pieces = [];
    const seen = [];
    const r2 = await small.generate('hello', { ...greedy, onToken: (t) => pieces.push(t),
                                               onRoute: (e) => seen.push(e) });
    assert.equal(r2.route, 'cloud');
    assert.match(r2.reason, /memory plan/);
    assert.equal(r2.text, reference);
    assert.equal(pieces.join(''), reference);
    assert.ok(pieces.length >= 2, `streamed in ${pieces.length} pieces`);
    assert.deepEqual(seen.map((e) => e.route), ['cloud']);
    let streamedAgain = '';
    for await (const p of small.stream('hello', greedy)) streamedAgain += p;
    assert.equal(streamedAgain, reference);
    await small.dispose();
    await assert.rejects(small.generate('hello'), { code: 'ERR_DISPOSED' });

    // The model file is damaged after the decision: the cloud takes over (never under privacy).
    const dir = scratch('runtime');
    for (const privacy of [false, true]) {
      const copy = path.join(dir, `model-${privacy}.gguf`);
      fs.copyFileSync(file, copy);
      const events = [];
      const rt = await Runtime.create({ ...base, modelPath: copy, privacy,
                                        onRoute: (e) => events.push(e) });
      assert.equal(rt.decision.route, 'on-device');
      fs.truncateSync(copy, fs.statSync(copy).size / 2);
      if (privacy) {
        await assert.rejects(rt.generate('hello', greedy), { code: 'ERR_CORRUPT_DATA' });
      } else {
        const r = await rt.generate('hello', greedy);
        assert.deepEqual([r.route, r.fellBack, r.text], ['cloud', true, reference]);
        assert.ok(r.failure.length > 0);
        assert.deepEqual(events.map((e) => [e.route, e.fallback]),
                         [['on-device', false], ['cloud', true]]);
      }
      await rt.dispose();
    }

    // Privacy with a model that does not fit: refused, with the reason.
    const refuse = await Runtime.create({ ...base, ramBytes: 64 * 2 ** 20, privacy: true });
    assert.equal(refuse.decision.route, 'refuse');
    await assert.rejects(refuse.generate('hello'), { code: 'ERR_FAILED_PRECONDITION' });
    await refuse.dispose();

    // A dead cloud and no model: a clear error, not a hang.
    const dead = await Runtime.create({ modelPath: path.join(dir, 'none.gguf'),
                                        cloud: { baseUrl: 'http://127.0.0.1:9', maxRetries: 0,
                                                 connectTimeoutS: 2 } });
    await assert.rejects(dead.generate('hello', greedy), (err) => typeof err.code === 'string');
    await dead.dispose();
    await assert.rejects(Runtime.create({ cloud: { baseUrl: 'ftp://nope' } }),
                         { code: 'ERR_INVALID_ARGUMENT' });
    await assert.rejects(Runtime.create({ onRoute: 3 }), TypeError);
  } finally {
    await serve.stop();
  }
});

test('lifecycle stress: LoRA and Runtime with dispose mid-request and GC', { timeout: 180_000 },
     async () => {
  require('node:v8').setFlagsFromString('--expose-gc');
  const gc = require('node:vm').runInNewContext('gc');
  const file = model();
  const dir = scratch('lifecycle');
  const adapterFile = path.join(dir, 'adapter.gguf');
  execFileSync(cli, ['synth', '--preset', 'tiny', '--lora', '--seed', '5', '-o', adapterFile],
               { stdio: 'ignore' });
  for (let i = 0; i < 8; i++) {
    const m = await Model.load(file, { threads: 2, ctx: 128, warmup: false });
    const a = await m.loadLora(adapterFile);
    const work = [m.setLora(a, 0.5 + i / 8), m.generate(`s${i}`, { temperature: 0, maxTokens: 32 }),
                  m.removeLora(a), m.generate('x', { maxTokens: 8 })];
    if (i % 2) edgellm.pause();
    const rt = await Runtime.create({ modelPath: file, ctx: 128, preferOnDevice: true });
    const routed = rt.generate('route', { temperature: 0, maxTokens: 16 });
    await new Promise((r) => setTimeout(r, i * 5));
    const disposing = [i % 3 === 0 ? m.dispose() : null, rt.dispose()];
    edgellm.resume();
    gc();
    for (const s of await Promise.allSettled([...work, routed])) {
      if (s.status === 'rejected') {
        assert.ok(['ERR_DISPOSED', 'ERR_CANCELLED', 'ERR_FAILED_PRECONDITION'].includes(s.reason.code),
                  `unexpected ${s.reason.code}: ${s.reason.message}`);
      }
    }
    await Promise.all(disposing);
    if (i % 3 !== 0) await m.dispose();
    gc();
  }
  // Dropped without dispose: GC and the environment cleanup free them.
  (await Runtime.create({ modelPath: file, ctx: 128, preferOnDevice: true })).generate('drop');
  gc();
});

'use strict';
// The folder is an npm package: `npm pack` runs prebuilds.js, which puts the addon under
// prebuilds/<platform>-<arch>/, and an install of the tarball works from another folder.
// scripts/consumer.sh packs the real thing (the portable x64 and the arm64 addons) and installs
// it with npm into an empty project; this test packs this checkout's build.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { scratch, model } = require('../testutil/fixtures');

const pkgDir = path.resolve(__dirname, '..');
const addon = path.join(pkgDir, 'build', 'edgellm.node');
// This build's addon as the x64 prebuild; no arm64 one, whatever build-aarch64/ holds.
const packEnv = (x64) => ({ ...process.env, EDGELLM_PREBUILD_LINUX_X64: x64,
                             EDGELLM_PREBUILD_LINUX_ARM64: path.join(scratch('none'), 'missing') });

test('npm pack, then require the installed package', { timeout: 120_000 }, () => {
  const out = scratch('pack');
  const json = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', out],
    { cwd: pkgDir, encoding: 'utf8', env: packEnv(addon), stdio: ['ignore', 'pipe', 'pipe'] }));
  const files = json[0].files.map((f) => f.path).sort();
  assert.deepEqual(files, ['LICENSE.llama.cpp', 'README.md', 'conversation.js', 'index.d.ts',
                           'index.js', 'package.json', `prebuilds/linux-${process.arch}/edgellm.node`,
                           'retrieval.js', 'runtime.js', 'stream.js']);
  const tarball = path.join(out, json[0].filename);
  assert.ok(fs.statSync(tarball).size > 1e6);
  const app = path.join(out, 'app');
  fs.mkdirSync(path.join(app, 'node_modules', 'edgellm'), { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', path.join(app, 'node_modules', 'edgellm'),
                       '--strip-components=1']);
  const script = `const e = require('edgellm');
    e.Model.load(${JSON.stringify(model())}, { ctx: 64 })
      .then(async (m) => {
        const r = await m.generate('hi', { temperature: 0, maxTokens: 2 });
        const c = await m.conversation();
        const t = await c.send('hi', { temperature: 0, maxTokens: 2 });
        await m.dispose();
        return r.stats.nGen + t.stats.nGen;
      })
      .then((n) => console.log(n));`;
  const env = { ...process.env };
  delete env.EDGELLM_NODE_ADDON;
  assert.equal(execFileSync(process.execPath, ['-e', script], { cwd: app, env, encoding: 'utf8' })
    .trim(), '4');
});

test('npm pack refuses an addon that is missing or not for its platform', { timeout: 60_000 }, () => {
  const out = scratch('pack-bad');
  const notElf = path.join(out, 'edgellm.node');
  fs.writeFileSync(notElf, 'not a shared object');
  for (const [x64, message] of [[path.join(out, 'missing.node'), /is missing: build the linux-x64 addon first \(bash scripts\/dist\.sh\)/],
                                [notElf, /not an ELF file, expected the linux-x64 addon/]]) {
    const r = spawnSync('npm', ['pack', '--pack-destination', out], { cwd: pkgDir, encoding: 'utf8',
                                                                      env: packEnv(x64) });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, message);
    assert.deepEqual(fs.readdirSync(out).filter((f) => f.endsWith('.tgz')), []);
  }
});

'use strict';
// The folder is an npm package: `npm pack` takes the addon, the JS layer and the types, and an
// install of the tarball works from another folder.
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { scratch, model } = require('../testutil/fixtures');

const pkgDir = path.resolve(__dirname, '..');

test('npm pack, then require the installed package', { timeout: 120_000 }, () => {
  const out = scratch('pack');
  const json = JSON.parse(execFileSync('npm', ['pack', '--json', '--pack-destination', out],
                                       { cwd: pkgDir, encoding: 'utf8' }));
  const files = json[0].files.map((f) => f.path).sort();
  assert.deepEqual(files, ['README.md', 'build/edgellm.node', 'conversation.js', 'index.d.ts',
                           'index.js', 'package.json', 'runtime.js', 'stream.js']);
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

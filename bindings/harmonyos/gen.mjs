#!/usr/bin/env node
// Writes the edgellm HAR (bindings/harmonyos/edgellm/) from bindings/node, the one source of
// truth: every file below is generated, none is edited by hand.
//   edgellm/Index.js, conversation.js, ...   the JS layer as ES modules      (gen_js.mjs)
//   edgellm/Index.d.ts                       its ArkTS declarations          (gen_types.mjs)
//   edgellm/oh-package.json5                 the HAR: name "edgellm", version from package.json
//   edgellm/src/main/cpp/types/libedgellm/   the raw native module's declaration + package
//
//   node bindings/harmonyos/gen.mjs           writes them (and deletes generated files no longer made)
//   node bindings/harmonyos/gen.mjs --check   exit 1 when one is stale, missing or left over
// Exit 2 when the sources cannot be converted, or when index.js and index.d.ts export different
// values (the default export of both is built from those lists).
import { readFileSync, writeFileSync, mkdirSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateJs, HAR_DIR } from './gen_js.mjs';
import { generateTypes } from './gen_types.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const PACKAGE = join(root, 'bindings', 'node', 'package.json');
const COMMAND = 'node bindings/harmonyos/gen.mjs';
const MARK = 'GENERATED FILE - do not edit.';
const rel = (p) => relative(root, p).split('\\').join('/');

const { version, description, license } = JSON.parse(readFileSync(PACKAGE, 'utf8'));
if (typeof version !== 'string') {
  process.stderr.write(`gen: ${rel(PACKAGE)} has no version\n`);
  process.exit(2);
}
const js = generateJs({ version, command: COMMAND });
const types = generateTypes({ version, command: COMMAND });

const missingInTypes = js.exports.filter((n) => !types.exports.includes(n));
const missingInJs = types.exports.filter((n) => !js.exports.includes(n));
if (missingInTypes.length || missingInJs.length) {
  process.stderr.write('gen: bindings/node/index.js and index.d.ts export different values:' +
    (missingInTypes.length ? ` only index.js has ${missingInTypes.join(', ')};` : '') +
    (missingInJs.length ? ` only index.d.ts has ${missingInJs.join(', ')};` : '') +
    ' declare (or drop) them so both sides agree\n');
  process.exit(2);
}

const NATIVE_DIR = join(HAR_DIR, 'src', 'main', 'cpp', 'types', 'libedgellm');
const json5 = (comment, obj) => `// ${MARK} ${comment}\n// Regenerate: ${COMMAND}\n` +
  `${JSON.stringify(obj, null, 2)}\n`;
const files = [
  ...js.files,
  ...types.files,
  [join(HAR_DIR, 'oh-package.json5'), json5('The edgellm HAR (ohpm package).', {
    name: 'edgellm',
    version,
    description: description ?? 'edgellm',
    main: 'Index.js',
    types: 'Index.d.ts',
    license: license ?? 'UNLICENSED',
    dependencies: { 'libedgellm.so': 'file:./src/main/cpp/types/libedgellm' },
  })],
  [join(NATIVE_DIR, 'oh-package.json5'), json5('The native module\'s declaration package.', {
    name: 'libedgellm.so',
    types: './Index.d.ts',
    version,
    description: 'The raw NAPI module of edgellm (bindings/node/src); apps use the edgellm HAR',
  })],
  [join(NATIVE_DIR, 'Index.d.ts'), `// ${MARK} Regenerate: ${COMMAND}
// libedgellm.so, the raw NAPI module built from bindings/node/src (edgellm ${version}). An app
// never imports it: the HAR's Index.js does (\`import native from 'libedgellm.so'\`) and wraps it
// in the API that Index.d.ts declares. Its members are the addon's own (NativeModel, pull, ...),
// an internal interface, so they are not declared here.
declare const native: object;
export default native;
`],
];

// Generated files under edgellm/ that no source makes any more.
function generatedOnDisk(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...generatedOnDisk(p));
    else if (readFileSync(p, 'utf8').slice(0, 300).includes(MARK)) out.push(p);
  }
  return out;
}
const made = new Set(files.map(([f]) => f));
const leftOver = generatedOnDisk(HAR_DIR).filter((f) => !made.has(f));

if (process.argv.includes('--check')) {
  let bad = 0;
  for (const [file, want] of files) {
    const have = existsSync(file) ? readFileSync(file, 'utf8').replace(/\r\n/g, '\n') : null;
    if (have === want) continue;
    bad++;
    process.stderr.write(`${rel(file)} is ${have === null ? 'missing' : 'stale'}: run ${COMMAND}\n`);
    if (have !== null) {
      const a = have.split('\n');
      const b = want.split('\n');
      let i = 0;
      while (i < a.length && a[i] === b[i]) i++;
      process.stderr.write(`  first difference at line ${i + 1}:\n  on disk:   ${a[i] ?? '(end)'}\n` +
                           `  generated: ${b[i] ?? '(end)'}\n`);
    }
  }
  for (const f of leftOver) {
    bad++;
    process.stderr.write(`${rel(f)} is generated but no source makes it any more: run ${COMMAND}\n`);
  }
  if (bad) process.exit(1);
  process.stdout.write(`gen: the ${files.length} generated files of ${rel(HAR_DIR)} are up to date ` +
                       `(${js.exports.length} exports)\n`);
} else {
  for (const [file, text] of files) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
  }
  for (const f of leftOver) rmSync(f);
  process.stdout.write(`gen: wrote ${files.map(([f]) => rel(f)).join(', ')}` +
                       `${leftOver.length ? `; deleted ${leftOver.map(rel).join(', ')}` : ''}\n`);
}

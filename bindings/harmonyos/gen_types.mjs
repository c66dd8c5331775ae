// Derives the app-facing ArkTS (HarmonyOS NEXT) declarations of the edgellm HAR,
// bindings/harmonyos/edgellm/Index.d.ts, from bindings/node/index.d.ts, the one source of truth
// for edgellm's JS API. Used by gen.mjs (the command); exports generateTypes().
//
// What changes on the way (each step fails loudly when index.d.ts no longer has the shape it
// expects, rather than writing something half-converted):
//   1. Node-only types: AbortSignal -> AbortSignalLike (declared in the output: the three
//      members index.js uses), Buffer -> Uint8Array, `/// <reference types="node" />` dropped.
//      Anything else Node-only (NodeJS.*, process, require, node: imports) is an error.
//   2. Inline object types (`options?: { root?: string }`, `): { rssBytes: number }`,
//      `const version: {...}`) become named interfaces declared just before their user: ArkTS
//      forbids object-literal types (arkts-no-obj-literals-as-types) and an object literal must
//      match a declared interface, so the page needs names to type its option objects.
//      Names: function + parameter (DeviceProfileOptions), function's return (MemoryUsage),
//      constant + "Info" (VersionInfo), interface + property.
//   3. A default export, `EdgellmModule`, with every exported value (class, function, const) as
//      a member: the generated Index.js exports the same names both ways.
// No dependencies: plain text processing with brace matching, deterministic output.
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const SOURCE = join(root, 'bindings', 'node', 'index.d.ts');
const OUT_DTS = join(here, 'edgellm', 'Index.d.ts');
const rel = (p) => relative(root, p).split('\\').join('/');

function fail(message) {
  process.stderr.write(`gen_types: ${message}\n`);
  process.exit(2);
}

// The source with comments and string literals blanked (same length), so searches skip them.
function codeOnly(text) {
  let out = '';
  for (let i = 0; i < text.length;) {
    const two = text.slice(i, i + 2);
    if (two === '//' || two === '/*') {
      const end = two === '//' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2) + 2;
      const stop = end <= 1 || end === -1 ? text.length : end;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
    } else if (text[i] === '"' || text[i] === "'" || text[i] === '`') {
      const q = text[i];
      let j = i + 1;
      while (j < text.length && text[j] !== q) j += text[j] === '\\' ? 2 : 1;
      out += q + ' '.repeat(Math.max(0, j - i - 1)) + q;
      i = j + 1;
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Step 1: Node-only types.
const ABORT_SIGNAL_LIKE = `/** What the API needs of a cancel signal: ArkTS has no AbortSignal, so any object with these
 * members will do (the page's Canceller in entry/src/main/ets/common/Canceller.ets is one). The
 * listener runs once, when the operation is to stop. */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: "abort", listener: () => void, options?: AbortListenerOptions): void;
  removeEventListener(type: "abort", listener: () => void): void;
}
export interface AbortListenerOptions {
  once?: boolean;
}
`;

function replaceNodeTypes(text) {
  const code = codeOnly(text);
  for (const [re, what] of [[/\bNodeJS\./, 'NodeJS.*'], [/\bprocess\b/, 'process'],
                            [/\brequire\s*\(/, 'require()'],
                            [/\bimport\s*\(|^\s*import\s/m, 'an import (node: modules)']]) {
    if (re.test(code)) {
      fail(`${rel(SOURCE)} uses ${what}, which has no HarmonyOS counterpart: teach ` +
           `bindings/harmonyos/gen_types.mjs what to put instead`);
    }
  }
  const usesAbort = /\bAbortSignal\b/.test(code);
  if (/\bAbortSignalLike\b|\bAbortListenerOptions\b/.test(code)) {
    fail(`${rel(SOURCE)} declares AbortSignalLike/AbortListenerOptions itself: rename them in ` +
         'gen_types.mjs');
  }
  // Substitute in code only (comments keep their words), by position.
  let out = '';
  let last = 0;
  for (const m of code.matchAll(/\bAbortSignal\b|\bBuffer\b/g)) {
    out += text.slice(last, m.index) + (m[0] === 'Buffer' ? 'Uint8Array' : 'AbortSignalLike');
    last = m.index + m[0].length;
  }
  out += text.slice(last);
  out = out.replace(/^\/\/\/\s*<reference\s+types=["']node["']\s*\/>\n/gm, '');
  return usesAbort ? `${out.trimEnd()}\n\n${ABORT_SIGNAL_LIKE}` : out;
}

// Step 2: inline object types -> named interfaces.
const pascal = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const OPEN = { '(': ')', '[': ']', '{': '}' };

function matchingBrace(code, open) {
  const stack = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (OPEN[c]) stack.push(OPEN[c]);
    else if (c === ')' || c === ']' || c === '}') {
      if (stack.pop() !== c) fail(`unbalanced ${c} at offset ${i} of ${rel(SOURCE)}`);
      if (stack.length === 0) return i;
    }
  }
  return fail(`unclosed { at offset ${open} of ${rel(SOURCE)}`);
}

// Members of `{ a: T; b?: (x: U) => void }`, split at depth 0 on ';' and on line ends before a
// new member. A member keeps the comment lines above it.
function members(body, bodyCode) {
  const out = [];
  let depth = 0;
  let start = 0;
  const memberStart = /^\s*(readonly\s+)?[A-Za-z_$][\w$]*\??\s*[:(<]/;
  for (let i = 0; i <= bodyCode.length; i++) {
    const c = bodyCode[i];
    if (c && OPEN[c]) depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    const end = i === bodyCode.length || (depth === 0 && (c === ';' ||
      (c === '\n' && /[\w$)\]}>"']\s*$/.test(bodyCode.slice(start, i)) &&
       !/=>\s*$/.test(bodyCode.slice(start, i)) && memberStart.test(bodyCode.slice(i + 1)))));
    if (!end) continue;
    const piece = bodyCode.slice(start, i);
    const codeAt = piece.search(/\S/);
    if (codeAt >= 0) {
      const comments = body.slice(start, start + codeAt).split('\n').map((l) => l.trim())
        .filter(Boolean);
      const member = body.slice(start + codeAt, i).trim().replace(/\s*\n\s*/g, ' ');
      out.push([...comments.map((l) => (l.startsWith('*') ? ` ${l}` : l)), `${member};`]);
    }
    start = i + 1;
  }
  return out;
}

// The declaration enclosing offset `at`: its name, kind and where its leading comment starts.
function enclosing(text, code, at) {
  const re = /^export\s+(?:declare\s+)?(function|const|let|interface|class|type)\s+([A-Za-z_$][\w$]*)/gm;
  let found = null;
  for (const m of code.matchAll(re)) {
    if (m.index > at) break;
    found = { kind: m[1], name: m[2], start: m.index };
  }
  if (!found) fail(`an inline object type at offset ${at} of ${rel(SOURCE)} is outside any export`);
  // Back over the comment lines right above it.
  const lines = text.slice(0, found.start).split('\n');
  lines.pop();
  while (lines.length && /^\s*(\/\/|\/\*\*|\*|\*\/)/.test(lines[lines.length - 1])) lines.pop();
  found.insertAt = lines.length ? lines.join('\n').length + 1 : 0;
  return found;
}

function hoistObjectTypes(text) {
  const declared = new Set();
  for (;;) {
    const code = codeOnly(text);
    for (const m of code.matchAll(/\b(?:interface|class|type)\s+([A-Za-z_$][\w$]*)/g)) declared.add(m[1]);
    // A `{` in a type position: after ':' (a property, parameter, return or constant's type).
    const m = /(\)|[A-Za-z_$][\w$]*\??)\s*:\s*\{/.exec(code);
    if (!m) return text;
    const open = m.index + m[0].length - 1;
    const close = matchingBrace(code, open);
    const decl = enclosing(text, code, m.index);
    const owner = m[1] === ')' ? null : m[1].replace(/\?$/, '');
    let name;
    if (decl.kind === 'function') name = owner ? pascal(decl.name) + pascal(owner) : pascal(decl.name);
    else if (decl.kind === 'const' || decl.kind === 'let') name = `${pascal(decl.name)}Info`;
    else name = pascal(decl.name) + pascal(owner ?? 'Result');
    if (declared.has(name)) name += 'Type';
    if (declared.has(name)) fail(`no free name for the object type at offset ${open} (tried ${name})`);
    const body = members(text.slice(open + 1, close), code.slice(open + 1, close));
    const lines = body.flat().map((l) => `  ${l}`).join('\n');
    const iface = `export interface ${name} {\n${lines}\n}\n`;
    let before = text.slice(decl.insertAt, open);
    // A parameter wrapped onto its own line only for the literal's length joins its line again.
    const wrapped = /,\n[ \t]+([A-Za-z_$][\w$]*\??\s*:\s*)$/.exec(before);
    if (wrapped) {
      const lineStart = before.lastIndexOf('\n', wrapped.index - 1) + 1;
      const after = text.slice(close + 1).split('\n')[0];
      const joined = `${before.slice(lineStart, wrapped.index)}, ${wrapped[1]}${name}${after}`;
      if (joined.length <= 100) before = `${before.slice(0, wrapped.index)}, ${wrapped[1]}`;
    }
    text = text.slice(0, decl.insertAt) + iface + before + name + text.slice(close + 1);
  }
}

// Step 3: the default export. Returns the text and the exported value names.
const DEFAULT_IFACE = 'EdgellmModule';
function addDefaultExport(text) {
  const code = codeOnly(text);
  if (/^export\s+default\b|^export\s*\{|^export\s*\*/m.test(code)) {
    fail(`${rel(SOURCE)} has an \`export default\`, \`export {...}\` or \`export *\`: teach ` +
         'gen_types.mjs to merge it into the generated default export');
  }
  if (new RegExp(`\\b${DEFAULT_IFACE}\\b`).test(code)) {
    fail(`${rel(SOURCE)} declares ${DEFAULT_IFACE} itself: rename it in gen_types.mjs`);
  }
  const names = [];
  const re = /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:function|class|const|let|var)\s+([A-Za-z_$][\w$]*)/gm;
  for (const m of code.matchAll(re)) if (!names.includes(m[1])) names.push(m[1]);
  const members = names.map((n) => `  ${n}: typeof ${n};`).join('\n');
  return {
    text: `${text.trimEnd()}\n\n/** The default export (\`import edgellm from 'edgellm'\`): the same values as the named\n` +
      ` * exports. */\nexport interface ${DEFAULT_IFACE} {\n${members}\n}\ndeclare const edgellm: ${DEFAULT_IFACE};\n` +
      'export default edgellm;\n',
    names,
  };
}

export function generateTypes({ version, command }) {
  if (!existsSync(SOURCE)) fail(`${rel(SOURCE)} is missing`);
  const source = readFileSync(SOURCE, 'utf8').replace(/\r\n/g, '\n');
  const { text: body, names } = addDefaultExport(hoistObjectTypes(replaceNodeTypes(source)));
  const header = `// GENERATED FILE - do not edit. Source: bindings/node/index.d.ts (edgellm ${version}).
// Regenerate: ${command}   Check: ${command} --check
// The ArkTS (HarmonyOS NEXT) declarations of the edgellm HAR, for \`import { Model } from 'edgellm'\`
// (Index.js, generated from bindings/node/index.js). Differences from the source: AbortSignal is
// AbortSignalLike (ArkTS has none), inline object types are named interfaces (ArkTS forbids
// object-literal types), and a default export with every value. bindings/harmonyos/README.md.

`;
  return { files: [[OUT_DTS, `${header}${body.trimEnd()}\n`]], exports: names };
}

if (process.argv[1] && join(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stderr.write('this is a part of bindings/harmonyos/gen.mjs: run that\n');
  process.exit(2);
}

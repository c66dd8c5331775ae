// Derives the edgellm HAR's JavaScript (ES modules) from bindings/node's CommonJS layer, the one
// source of the Model/Conversation/stream logic: index.js -> edgellm/Index.js, and every file it
// requires by a relative path (conversation.js, stream.js, ...) under its own name. Used by
// gen.mjs (the command); exports generateJs().
//
// What changes on the way, in this order (each step fails, exit 2, when the source no longer has
// the shape it expects, rather than writing something half-converted):
//   1. `'use strict';` lines go (modules are strict).
//   2. `// @node-only begin` ... `// @node-only end` blocks go, both marker lines included.
//   3. Top-level `const { A, B: c } = require('./x.js');` becomes `import { A, B as c } from
//      './x.js';` and `const x = require('./x.js');` becomes `import x from './x.js';`.
//   4. `module.exports = { A, key: expression, ... };` becomes `const key = expression;` for each
//      non-shorthand entry, then `export { ... };` and `export default { ... };` of all names.
//   5. Index.js gets `import native from 'libedgellm.so';` (the native module on HarmonyOS: what
//      the dropped block loaded on Node).
//   6. Host globals HarmonyOS's ArkTS runtime is not known to have (AbortController, performance)
//      get a module-local stand-in that uses the runtime's own when there is one.
// Then any `require(`, `process.`, `__dirname`, `__filename`, `module.exports`, `exports.`,
// `Buffer` or `setImmediate` left in the code (comments and string text do not count) is an
// error.
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const NODE_DIR = join(root, 'bindings', 'node');
const ENTRY = join(NODE_DIR, 'index.js');
export const HAR_DIR = join(here, 'edgellm');
const NATIVE_SPECIFIER = 'libedgellm.so';
const rel = (p) => relative(root, p).split('\\').join('/');

function fail(message) {
  process.stderr.write(`gen_js: ${message}\n`);
  process.exit(2);
}

// The source with comments blanked (same length). With `strings`, string and template text is
// blanked too, but a template's ${...} expressions are kept (they are code).
function blank(text, strings) {
  let out = '';
  let i = 0;
  const n = text.length;
  const scanTemplate = () => {  // at the opening backtick
    out += '`';
    i++;
    while (i < n && text[i] !== '`') {
      if (text[i] === '\\') { out += strings ? '  ' : text.slice(i, i + 2); i += 2; continue; }
      if (text[i] === '$' && text[i + 1] === '{') {
        out += '${';
        i += 2;
        scanCode('}');
        out += '}';
        i++;
        continue;
      }
      out += strings && text[i] !== '\n' ? ' ' : text[i];
      i++;
    }
    out += '`';
    i++;
  };
  const scanCode = (until) => {
    let depth = 0;
    while (i < n) {
      const c = text[i];
      const two = text.slice(i, i + 2);
      if (until && c === until && depth === 0) return;
      if (two === '//' || two === '/*') {
        let end = two === '//' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2);
        end = end === -1 ? n : two === '//' ? end : end + 2;
        out += text.slice(i, end).replace(/[^\n]/g, ' ');
        i = end;
      } else if (c === '"' || c === "'") {
        let j = i + 1;
        while (j < n && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
        out += strings ? c + ' '.repeat(Math.max(0, j - i - 1)) + c : text.slice(i, j + 1);
        i = j + 1;
      } else if (c === '`') {
        scanTemplate();
      } else {
        if (c === '{') depth++;
        else if (c === '}') depth--;
        out += c;
        i++;
      }
    }
  };
  scanCode(null);
  return out;
}

const OPEN = { '(': ')', '[': ']', '{': '}' };
function matching(code, open, file) {
  const stack = [];
  for (let i = open; i < code.length; i++) {
    const c = code[i];
    if (OPEN[c]) stack.push(OPEN[c]);
    else if (c === ')' || c === ']' || c === '}') {
      if (stack.pop() !== c) fail(`unbalanced ${c} at offset ${i} of ${rel(file)}`);
      if (stack.length === 0) return i;
    }
  }
  return fail(`unclosed ${code[open]} at offset ${open} of ${rel(file)}`);
}

function dropNodeOnly(text, file) {
  const out = [];
  let inside = 0;
  let dropped = false;  // a block just ended: one blank line where it was, not two
  text.split('\n').forEach((line, k) => {
    if (/^\s*\/\/\s*@node-only begin\b/.test(line)) {
      if (inside) fail(`${rel(file)}:${k + 1}: @node-only begin inside the block begun at line ${inside}`);
      inside = k + 1;
    } else if (/^\s*\/\/\s*@node-only end\b/.test(line)) {
      if (!inside) fail(`${rel(file)}:${k + 1}: @node-only end without a begin`);
      inside = 0;
      dropped = true;
    } else if (!inside) {
      if (!(dropped && line.trim() === '' && (out.length === 0 || out[out.length - 1].trim() === ''))) {
        out.push(line);
      }
      dropped = false;
    }
  });
  if (inside) fail(`${rel(file)}:${inside}: @node-only begin without an end`);
  return out.join('\n');
}

const IDENT = '[A-Za-z_$][\\w$]*';

// Step 3: relative requires -> imports. Returns the text and the required source files.
function requiresToImports(text, file, outName) {
  const deps = [];
  const re = new RegExp(`^(?:const|let|var)\\s+(\\{[^}]*\\}|${IDENT})\\s*=\\s*require\\(\\s*` +
                        `(['"])(\\.{1,2}/[^'"]+)\\2\\s*\\)\\s*;?[ \\t]*$`, 'gm');
  text = text.replace(re, (all, binding, _q, spec) => {
    const target = resolve(dirname(file), spec);
    if (!existsSync(target)) fail(`${rel(file)} requires ${spec}, which is missing`);
    deps.push(target);
    const to = posix.relative(posix.dirname(outName), outName_(target)) || outName_(target);
    const specOut = to.startsWith('.') ? to : `./${to}`;
    if (!binding.startsWith('{')) return `import ${binding} from '${specOut}';`;
    const names = binding.slice(1, -1).split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
      const m = new RegExp(`^(${IDENT})(?:\\s*:\\s*(${IDENT}))?$`).exec(s);
      if (!m) fail(`${rel(file)}: cannot turn \`${s}\` of \`${all.trim()}\` into an import`);
      return m[2] && m[2] !== m[1] ? `${m[1]} as ${m[2]}` : m[1];
    });
    return `import { ${names.join(', ')} } from '${specOut}';`;
  });
  return { text, deps };
}

// Step 4: module.exports = {...} -> named exports and a default export.
function exportsToEsm(text, file) {
  const code = blank(text, true);
  const m = /^module\.exports\s*=\s*/m.exec(code);
  if (!m) fail(`${rel(file)} has no top-level \`module.exports = { ... }\``);
  const open = m.index + m[0].length;
  if (code[open] !== '{') fail(`${rel(file)}: module.exports is not an object literal`);
  const close = matching(code, open, file);
  let end = close + 1;
  while (code[end] === ' ' || code[end] === '\t') end++;
  if (code[end] === ';') end++;
  // Entries split at depth-0 commas.
  const entries = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i <= close; i++) {
    const c = code[i];
    if (i === close || (c === ',' && depth === 0)) {
      const piece = text.slice(start, i).trim();
      if (piece) entries.push(piece.replace(/^(\/\/[^\n]*\n\s*)+/, ''));
      start = i + 1;
    } else if (OPEN[c]) depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
  }
  const declared = new Set();
  const declRe = new RegExp(`^(?:export\\s+)?(?:async\\s+)?(?:const|let|var|class|function\\*?)\\s+(${IDENT})`, 'gm');
  for (const d of code.matchAll(declRe)) declared.add(d[1]);
  for (const d of code.matchAll(/^import\s+\{([^}]*)\}/gm)) {
    for (const s of d[1].split(',')) declared.add(s.trim().split(/\s+as\s+/).pop());
  }
  for (const d of code.matchAll(new RegExp(`^import\\s+(${IDENT})\\s+from`, 'gm'))) declared.add(d[1]);
  const consts = [];
  const names = [];   // exported names, in source order
  const specs = [];   // `local` or `local as name`
  for (const e of entries) {
    let mm;
    if ((mm = new RegExp(`^(${IDENT})$`).exec(e))) {
      if (!declared.has(mm[1])) fail(`${rel(file)} exports ${mm[1]}, which it does not declare at top level`);
      names.push(mm[1]);
      specs.push(mm[1]);
    } else if ((mm = new RegExp(`^(${IDENT})\\s*:\\s*([\\s\\S]+)$`).exec(e))) {
      const [, key, expr] = mm;
      names.push(key);
      if (expr === key && declared.has(key)) { specs.push(key); continue; }
      const local = declared.has(key) ? `${key}$export` : key;
      if (declared.has(local)) fail(`${rel(file)}: no free name for the export ${key}`);
      declared.add(local);
      consts.push(`const ${local} = ${expr};`);
      specs.push(local === key ? key : `${local} as ${key}`);
    } else {
      fail(`${rel(file)}: module.exports entry \`${e.split('\n')[0]}\` is neither \`name\` nor ` +
           '`name: expression`: teach bindings/harmonyos/gen_js.mjs to convert it');
    }
  }
  if (new Set(names).size !== names.length) fail(`${rel(file)} exports a name twice`);
  const wrap = (head, items, tail) => {
    const one = `${head}${items.join(', ')}${tail}`;
    if (one.length <= 100) return one;
    const lines = [];
    let line = ' ';
    for (const it of items) {
      if (line.length + it.length + 2 > 100) { lines.push(line.trimEnd()); line = ' '; }
      line += ` ${it},`;
    }
    lines.push(line.trimEnd());
    return `${head.trimEnd()}\n${lines.join('\n')}\n${tail.trimStart()}`;
  };
  const defaults = specs.map((s, k) => (s.includes(' as ') ? `${names[k]}: ${s.split(' as ')[0]}` : s));
  const block = [...consts, wrap('export { ', specs, ' };'),
                 wrap('export default { ', defaults, ' };')].join('\n');
  return { text: text.slice(0, m.index) + block + text.slice(end), names };
}

// Step 6: stand-ins for host globals, each used only when the runtime lacks the global.
const STAND_INS = {
  performance: `const performance = globalThis.performance ?? { now: () => Date.now() };`,
  AbortController: `const AbortController = globalThis.AbortController ?? class AbortController {
  #listeners = [];
  signal = {
    aborted: false,
    reason: undefined,
    addEventListener: (type, fn) => {
      if (type === 'abort' && !this.signal.aborted) this.#listeners.push(fn);
    },
    removeEventListener: (type, fn) => {
      const i = this.#listeners.indexOf(fn);
      if (i >= 0) this.#listeners.splice(i, 1);
    },
  };

  abort(reason) {
    if (this.signal.aborted) return;
    this.signal.aborted = true;
    this.signal.reason = reason;
    for (const fn of this.#listeners.splice(0)) fn();
  }
};`,
};
const FORBIDDEN = [[/\brequire\s*\(/, 'require('], [/(?<![.\w$])process\s*\./, 'process.'],
                   [/\b__dirname\b/, '__dirname'], [/\b__filename\b/, '__filename'],
                   [/\bmodule\.exports\b/, 'module.exports'], [/(?<![.\w$])exports\s*\./, 'exports.'],
                   [/(?<![.\w$])Buffer\b/, 'Buffer'], [/(?<![.\w$])setImmediate\b/, 'setImmediate']];

function outName_(source) {
  const r = relative(NODE_DIR, source).split('\\').join('/');
  return r === 'index.js' ? 'Index.js' : r;
}

export function generateJs({ version, command }) {
  if (!existsSync(ENTRY)) fail(`${rel(ENTRY)} is missing`);
  const files = [];
  let exportsOfEntry = null;
  const seen = new Set();
  const queue = [ENTRY];
  while (queue.length) {
    const file = queue.shift();
    if (seen.has(file)) continue;
    seen.add(file);
    if (relative(NODE_DIR, file).startsWith('..')) fail(`${rel(file)} is outside bindings/node`);
    const outName = outName_(file);
    let text = readFileSync(file, 'utf8').replace(/\r\n/g, '\n');
    text = text.replace(/^\s*['"]use strict['"];?[ \t]*\n/m, '');
    text = dropNodeOnly(text, file);
    const r = requiresToImports(text, file, outName);
    queue.push(...r.deps);
    const e = exportsToEsm(r.text, file);
    text = e.text;
    if (file === ENTRY) exportsOfEntry = e.names;
    const code = blank(text, true);
    for (const [re, what] of FORBIDDEN) {
      const hit = re.exec(code);
      if (hit) {
        const at = text.lastIndexOf('\n', hit.index) + 1;
        const line = text.slice(at, text.indexOf('\n', hit.index) >>> 0).trim();
        fail(`${rel(file)}: \`${what}\` is left after the conversion, in \`${line}\`: it has no ` +
             'HarmonyOS counterpart; put it in a ' +
             '`// @node-only begin` ... `// @node-only end` block or teach gen_js.mjs');
      }
    }
    let prelude = '';
    if (file === ENTRY) {
      if (new RegExp('^(?:const|let|var|function|class|import)\\s+(?:\\{[^}]*\\bnative\\b|native\\b)', 'm').test(code)) {
        fail(`${rel(file)} still declares \`native\` outside a @node-only block: on HarmonyOS it is ` +
             `\`import native from '${NATIVE_SPECIFIER}'\``);
      }
      prelude += `import native from '${NATIVE_SPECIFIER}';\n`;
    }
    const standIns = Object.keys(STAND_INS).filter((g) =>
      new RegExp(`(?<![.\\w$])${g}\\b`).test(code) &&
      !new RegExp(`^(?:const|let|var|class|function)\\s+${g}\\b`, 'm').test(code));
    if (standIns.length) {
      prelude += `${prelude ? '\n' : ''}// Stand-ins for what HarmonyOS's runtime may lack; the runtime's own when it has it.\n` +
        standIns.map((g) => STAND_INS[g]).join('\n') + '\n';
    }
    const header = `// GENERATED FILE - do not edit. Source: ${rel(file)} (edgellm ${version}), as an ES\n` +
      `// module for the edgellm HAR. Regenerate: ${command}\n// Check: ${command} --check\n`;
    text = text.replace(/^\n+/, '');
    // The prelude goes after the file's leading comment block.
    const lead = /^(?:\/\/[^\n]*\n)*/.exec(text)[0];
    const body = text.slice(lead.length).replace(/^\n+/, '');
    const out = `${header}${lead}${prelude ? `\n${prelude}` : ''}\n${body.trimEnd()}\n`;
    files.push([join(HAR_DIR, outName), out]);
  }
  return { files, exports: exportsOfEntry };
}

if (process.argv[1] && join(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.stderr.write('this is a part of bindings/harmonyos/gen.mjs: run that\n');
  process.exit(2);
}

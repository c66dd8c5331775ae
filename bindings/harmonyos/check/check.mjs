#!/usr/bin/env node
// Type-checks the ArkTS demo (bindings/harmonyos/entry/src/main/ets/**/*.ets) against the
// generated declarations of the edgellm HAR (edgellm/Index.d.ts) and arkui-shim.d.ts, with
// ohos-typescript (OpenHarmony's TypeScript fork: it parses `struct`, decorators and the build()
// DSL) and its ArkTS linter (the rules ArkTS adds to TypeScript: no any/unknown, typed object
// literals, no destructuring, ...). Exits 1 on any diagnostic, 2 when it cannot run.
//
//   (cd bindings/harmonyos/check && npm ci)   once: installs ohos-typescript (package-lock.json)
//   node bindings/harmonyos/check/check.mjs
import { createRequire } from 'node:module';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const harmonyos = join(here, '..');
const repo = join(harmonyos, '..', '..');
const rel = (p) => relative(repo, p).split('\\').join('/');

const require = createRequire(import.meta.url);
let ts;
try {
  ts = require('ohos-typescript');
} catch {
  process.stderr.write('check: ohos-typescript is not installed: run ' +
                       '(cd bindings/harmonyos/check && npm ci)\n');
  process.exit(2);
}
const tsVersion = require('ohos-typescript/package.json').version;

function etsFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...etsFiles(p));
    else if (e.name.endsWith('.ets')) out.push(p);
  }
  return out.sort();
}

const etsRoot = join(harmonyos, 'entry', 'src', 'main', 'ets');
const types = join(harmonyos, 'edgellm', 'Index.d.ts');
const shim = join(here, 'arkui-shim.d.ts');
for (const f of [etsRoot, types, shim]) {
  if (!existsSync(f)) {
    process.stderr.write(`check: ${rel(f)} is missing\n`);
    process.exit(2);
  }
}
const pages = etsFiles(etsRoot);

// The component names and decorators the ArkUI DSL knows: what DevEco's ets-loader passes in
// compilerOptions.ets, cut down to the shim's components.
// ForEach is not one of them: it is a syntax component, parsed as a call whose item callback may
// hold components (syntaxComponents.paramsUICallback).
const components = ['Column', 'Row', 'Scroll', 'List', 'ListItem', 'Text', 'Button', 'TextInput',
                    'Progress'];
const ets = {
  render: { method: ['build', 'pageTransition'], decorator: ['Builder'] },
  components,
  libs: [],
  extend: {
    decorator: ['Extend'],
    components: components.map((name) => ({ name, type: `${name}Attribute`, instance: `${name}Instance` })),
  },
  styles: {
    decorator: 'Styles',
    component: { name: 'Common', type: 'T', instance: 'CommonInstance' },
    property: 'stateStyles',
  },
  concurrent: { decorator: 'Concurrent' },
  customComponent: 'CustomComponent',
  propertyDecorators: [{ name: 'State', needInitialization: true }],
  emitDecorators: [{ name: 'Entry', emitParameters: true }, { name: 'Component', emitParameters: false }],
  syntaxComponents: { paramsUICallback: ['ForEach'], attrUICallback: [] },
};

const options = {
  target: ts.ScriptTarget.ES2021,
  module: ts.ModuleKind.ES2020,
  moduleResolution: ts.ModuleResolutionKind.NodeJs,
  lib: ['lib.es2021.d.ts'],
  types: [],
  strict: true,
  noEmit: true,
  noImplicitReturns: true,
  experimentalDecorators: true,
  allowSyntheticDefaultImports: true,
  baseUrl: harmonyos,
  // What DevEco resolves through the entry module's oh-package.json5 dependency
  // "edgellm": "file:../edgellm" (the HAR's "types": "Index.d.ts").
  paths: { edgellm: [rel(types).replace(/^bindings\/harmonyos\//, '')] },
  ets,
  // What DevEco sets for an ArkTS build with the linter on. Without it the checker resolves no
  // `*.so` import at all (warning 28014 and every import typed any), so the page would pass
  // whatever it called.
  needDoArkTsLinter: true,
  isCompatibleVersion: false,
};

const host = ts.createIncrementalCompilerHost(options);  // sets the versions a builder needs
const builder = ts.createEmitAndSemanticDiagnosticsBuilderProgram([...pages, shim], options, host);
const program = builder.getProgram();
const diagnostics = [
  ...program.getOptionsDiagnostics(),
  ...program.getGlobalDiagnostics(),
  ...program.getSyntacticDiagnostics(),
  ...program.getSemanticDiagnostics(),
];
// The ArkTS linter (1.1, what API 12+ projects use) on the .ets files: it reports the rules
// ArkTS adds (strict typing, no structural typing tricks) and, again, the strict tsc errors.
const linted = ts.ArkTSLinter_1_1.runArkTSLinter(builder, undefined, undefined, '1.1');
const seen = new Set();
const report = [];
for (const d of [...diagnostics, ...linted]) {
  const text = ts.flattenDiagnosticMessageText(d.messageText, '\n');
  let where = '';
  if (d.file && d.start !== undefined) {
    const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
    where = `${rel(d.file.fileName)}:${line + 1}:${character + 1}: `;
  }
  const kind = d.category === ts.DiagnosticCategory.Warning ? 'warning' : 'error';
  const line = `${where}${kind} ${d.code}: ${text}`;
  if (!seen.has(line)) { seen.add(line); report.push(line); }
}
if (report.length) {
  process.stderr.write(`${report.join('\n')}\ncheck: ${report.length} diagnostic(s) in ` +
                       `${pages.map(rel).join(', ')} (ohos-typescript ${tsVersion})\n`);
  process.exit(1);
}
process.stdout.write(`check: ${pages.length} .ets file(s) type-check and pass the ArkTS linter ` +
                     `(ohos-typescript ${tsVersion}): ${pages.map(rel).join(', ')}\n`);

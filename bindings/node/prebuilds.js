'use strict';
// npm's prepack step (`npm pack`, `npm publish` in bindings/node): puts the addons this package
// ships into prebuilds/<platform>-<arch>/edgellm.node, each checked to be an ELF shared object
// for its architecture, and llama.cpp's license beside them. Where each comes from:
//   linux-x64    ../../build-dist/node/edgellm.node     portable x86-64 (AVX2/FMA/F16C, no
//                                                       -march=native): bash scripts/dist.sh
//   linux-arm64  ../../build-aarch64/node/edgellm.node  armv8.2-a+dotprod: bash scripts/cross.sh aarch64
// EDGELLM_PREBUILD_LINUX_X64 / EDGELLM_PREBUILD_LINUX_ARM64 name other files. The x64 addon is
// required; a missing arm64 one is left out with a warning.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');
const targets = [
  { platform: 'linux-x64', machine: 0x3e, name: 'x86-64', required: true,
    file: process.env.EDGELLM_PREBUILD_LINUX_X64 || path.join(root, 'build-dist', 'node', 'edgellm.node'),
    how: 'bash scripts/dist.sh' },
  { platform: 'linux-arm64', machine: 0xb7, name: 'aarch64', required: false,
    file: process.env.EDGELLM_PREBUILD_LINUX_ARM64 || path.join(root, 'build-aarch64', 'node', 'edgellm.node'),
    how: 'bash scripts/cross.sh aarch64' },
];

function fail(message) {
  process.stderr.write(`prebuilds: ${message}\n`);
  process.exit(1);
}

// An ELF64 little-endian shared object (ET_DYN) for `machine`, or a message saying what it is.
function checkElf(file, machine, name) {
  const h = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, h, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (h.readUInt32BE(0) !== 0x7f454c46) return 'not an ELF file';
  if (h[4] !== 2 || h[5] !== 1) return 'not a 64-bit little-endian ELF file';
  if (h.readUInt16LE(16) !== 3) return 'not a shared object';
  if (h.readUInt16LE(18) !== machine) return `not built for ${name} (ELF machine ${h.readUInt16LE(18)})`;
  return '';
}

const out = path.join(__dirname, 'prebuilds');
fs.rmSync(out, { recursive: true, force: true });
for (const t of targets) {
  if (!fs.existsSync(t.file)) {
    if (t.required) fail(`${t.file} is missing: build the ${t.platform} addon first (${t.how})`);
    process.stderr.write(`prebuilds: warning: no ${t.platform} addon (${t.file}); the package ` +
                         `will not run on ${t.platform} (${t.how} builds it)\n`);
    continue;
  }
  const bad = checkElf(t.file, t.machine, t.name);
  if (bad) fail(`${t.file}: ${bad}, expected the ${t.platform} addon`);
  const dest = path.join(out, t.platform, 'edgellm.node');
  fs.mkdirSync(path.dirname(dest), { recursive: true });
  fs.copyFileSync(t.file, dest);
  const mib = (fs.statSync(dest).size / 1048576).toFixed(1);
  process.stderr.write(`prebuilds: ${t.platform}: ${path.relative(root, t.file)} (${mib} MiB)\n`);
}
const license = path.join(root, 'third_party', 'llama.cpp', 'LICENSE');
if (!fs.existsSync(license)) fail(`${license} is missing: run scripts/fetch_llama.sh`);
fs.copyFileSync(license, path.join(__dirname, 'LICENSE.llama.cpp'));

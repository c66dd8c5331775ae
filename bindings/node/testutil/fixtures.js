'use strict';
// Fixtures for the Node tests: real GGUF models made by the edgellm CLI (random weights at a
// real shape with the real Qwen2 tokenizer), cached under build/node-fixtures/.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const repo = path.resolve(__dirname, '..', '..', '..');
const cli = path.join(repo, 'build', 'bin', 'edgellm');
const dir = path.join(repo, 'build', 'node-fixtures');

function model(preset = 'tiny', type = 'Q8_0', seed = 1) {
  const file = path.join(dir, `${preset}-${type}-s${seed}.gguf`);
  if (!fs.existsSync(file)) {
    if (!fs.existsSync(cli)) throw new Error(`${cli} is missing: run scripts/setup.sh first`);
    fs.mkdirSync(dir, { recursive: true });
    execFileSync(cli, ['synth', '--preset', preset, '--type', type, '--seed', String(seed),
                       '-o', file], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return file;
}

// A tiny synth stamped with one of llama.cpp's real chat templates (models/templates/NAME).
function modelWithTemplate(template, seed = 1) {
  const tag = template.replace(/[^A-Za-z0-9]+/g, '-');
  const file = path.join(dir, `tiny-Q8_0-${tag}-s${seed}.gguf`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dir, { recursive: true });
    const tmpl = path.join(repo, 'third_party', 'llama.cpp', 'models', 'templates', template);
    execFileSync(cli, ['synth', '--preset', 'tiny', '--type', 'Q8_0', '--seed', String(seed),
                       '--chat-template', tmpl, '-o', file], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return file;
}

// A multimodal preset's text model and its projector (smolvlm-256m): { model, mmproj }.
function multimodal(preset = 'smolvlm-256m', type = 'Q8_0') {
  const file = path.join(dir, `${preset}-${type}.gguf`);
  const mmproj = path.join(dir, `${preset}-mmproj-F16.gguf`);
  if (!fs.existsSync(file) || !fs.existsSync(mmproj)) {  // the projector is written first
    fs.mkdirSync(dir, { recursive: true });
    execFileSync(cli, ['synth', '--preset', preset, '--type', type, '-o', file,
                       '--mmproj', mmproj], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return { model: file, mmproj };
}

function scratch(name) {
  const d = fs.mkdtempSync(path.join(dir, `${name}-`));
  return d;
}

module.exports = { repo, cli, model, modelWithTemplate, multimodal, scratch };

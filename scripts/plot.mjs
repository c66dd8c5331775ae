#!/usr/bin/env node
// Renders a line or bar chart to PNG with headless Chromium (already a test dependency), no
// plotting library needed.
//   node scripts/plot.mjs --train RUN.json -o docs/training-loss.png   (edgellm train --record)
//   node scripts/plot.mjs --spec CHART.json -o out.png
// A spec: {"title", "xlabel", "ylabel", "series": [{"name", "points": [[x, y], ...]}]}
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const out = opt('-o');
if (!out || (!opt('--train') && !opt('--spec'))) {
  console.error('usage: node scripts/plot.mjs (--train RUN.json | --spec CHART.json) -o OUT.png');
  process.exit(2);
}

let spec;
if (opt('--train')) {
  const run = JSON.parse(readFileSync(opt('--train'), 'utf8'));
  const steps = run.curve.length ? run.curve[run.curve.length - 1][0] : 1;
  const perEpoch = steps / run.epochs;
  spec = {
    title: `edgellm train: ${(run.n_params / 1e6).toFixed(2)}M parameters, vocabulary ${run.n_vocab}, ` +
           `${run.epochs} epochs, ${Math.round(run.seconds)} s`,
    xlabel: 'optimizer step (one 256-token window each)',
    ylabel: 'training loss (nats/token)',
    series: [
      { name: 'train (mean over each report interval)', points: run.curve },
      { name: 'validation (end of epoch)',
        points: (run.epoch_val_loss || []).map((v, i) => [Math.round((i + 1) * perEpoch), v]) },
    ],
  };
} else {
  spec = JSON.parse(readFileSync(opt('--spec'), 'utf8'));
}

const W = 900, H = 500, L = 70, R = 20, T = 40, B = 60;
const all = spec.series.flatMap((s) => s.points);
const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
const x0 = Math.min(...xs), x1 = Math.max(...xs);
const y0 = Math.min(0, Math.min(...ys)), y1 = Math.max(...ys) * 1.05;
const sx = (x) => L + ((x - x0) / (x1 - x0 || 1)) * (W - L - R);
const sy = (y) => H - B - ((y - y0) / (y1 - y0 || 1)) * (H - T - B);
const colors = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2'];
let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`;
svg += `<rect width="${W}" height="${H}" fill="white"/>`;
svg += `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${spec.title}</text>`;
for (let i = 0; i <= 5; ++i) {
  const y = y0 + ((y1 - y0) * i) / 5, x = x0 + ((x1 - x0) * i) / 5;
  svg += `<line x1="${L}" x2="${W - R}" y1="${sy(y)}" y2="${sy(y)}" stroke="#ddd"/>`;
  svg += `<text x="${L - 6}" y="${sy(y) + 4}" text-anchor="end">${y.toFixed(2)}</text>`;
  svg += `<text x="${sx(x)}" y="${H - B + 18}" text-anchor="middle">${Math.round(x)}</text>`;
}
svg += `<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="black"/>`;
svg += `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="black"/>`;
svg += `<text x="${W / 2}" y="${H - 15}" text-anchor="middle">${spec.xlabel}</text>`;
svg += `<text transform="translate(18 ${H / 2}) rotate(-90)" text-anchor="middle">${spec.ylabel}</text>`;
spec.series.forEach((s, i) => {
  const c = colors[i % colors.length];
  if (s.points.length > 1) {
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
    svg += `<path d="${d}" fill="none" stroke="${c}" stroke-width="1.5"/>`;
  }
  for (const p of s.points.length <= 40 ? s.points : []) {
    svg += `<circle cx="${sx(p[0])}" cy="${sy(p[1])}" r="3.5" fill="${c}"/>`;
  }
  svg += `<rect x="${W - R - 300}" y="${T + 8 + i * 18}" width="12" height="12" fill="${c}"/>`;
  svg += `<text x="${W - R - 282}" y="${T + 18 + i * 18}">${s.name}</text>`;
});
svg += '</svg>';

const dir = mkdtempSync(join(tmpdir(), 'edgellm-plot-'));
const html = join(dir, 'chart.html');
writeFileSync(html, `<html><body style="margin:0">${svg}</body></html>`);
execFileSync('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
  `--window-size=${W},${H}`, `--screenshot=${resolve(out)}`, `file://${html}`], { stdio: 'ignore' });
rmSync(dir, { recursive: true, force: true });
console.error(`wrote ${out}`);

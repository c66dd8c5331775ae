#!/usr/bin/env node
// Renders a line or bar chart to PNG with headless Chromium (already a test dependency), no
// plotting library needed.
//   node scripts/plot.mjs --train RUN.json -o docs/training-loss.png   (edgellm train --record)
//   node scripts/plot.mjs --study STUDY.json -o docs/quant-study.png  (edgellm quant-study --out)
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
if (!out || (!opt('--train') && !opt('--spec') && !opt('--study'))) {
  console.error('usage: node scripts/plot.mjs (--train RUN.json | --study STUDY.json | --spec CHART.json) -o OUT.png');
  process.exit(2);
}

let spec;
if (opt('--train')) {
  const run = JSON.parse(readFileSync(opt('--train'), 'utf8'));
  const steps = run.curve.length ? run.curve[run.curve.length - 1][0] : 1;
  const perEpoch = steps / run.epochs;
  const weighted = (run.prompt_loss_weight ?? 1) < 1;  // answer-weighted loss (edgellm train)
  spec = {
    title: `edgellm train: ${(run.n_params / 1e6).toFixed(2)}M parameters, vocabulary ${run.n_vocab}, ` +
           `${run.epochs} epochs, ${Math.round(run.seconds)} s`,
    xlabel: 'optimizer step (one 256-token window each)',
    ylabel: 'training loss (nats/token)',
    series: [
      { name: weighted ? 'train: answers + sampled prompt tokens (interval mean)' : 'train (mean over each report interval)',
        points: run.curve },
      { name: weighted ? 'validation: answers only (end of epoch)' : 'validation (end of epoch)',
        points: (run.epoch_val_loss || []).map((v, i) => [Math.round((i + 1) * perEpoch), v]) },
    ],
  };
} else if (opt('--study')) {
  // Accuracy per task against bits per weight, one line per task and imatrix choice (the
  // original at 32 bits is left out so the quantized range is readable; F16 stands for it).
  const study = JSON.parse(readFileSync(opt('--study'), 'utf8'));
  const vs = study.variants.filter((v) => v.type !== 'F32');
  const tasks = Object.keys(study.variants[0].tasks);
  const series = [];
  for (const t of tasks) {
    for (const im of [false, true]) {
      const pts = vs.filter((v) => v.imatrix === im || (im && !vs.some((w) => w.imatrix && w.type === v.type)))
        .map((v) => [v.bits_per_weight, 100 * v.tasks[t].accuracy]).sort((a, b) => a[0] - b[0]);
      if (pts.length) series.push({ name: `${t}${im ? ' (imatrix)' : ''}`, points: pts, colorIndex: tasks.indexOf(t), dash: im });
    }
  }
  spec = {
    title: `edgellm quant-study: held-out accuracy per task (${study.variants[0].type} original)`,
    xlabel: 'bits per weight (Q3_K_M ... Q8_0, F16)',
    ylabel: 'exact-match accuracy (%)',
    series,
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
  svg += `<text x="${sx(x)}" y="${H - B + 18}" text-anchor="middle">${x1 - x0 < 20 ? x.toFixed(1) : Math.round(x)}</text>`;
}
svg += `<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="black"/>`;
svg += `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="black"/>`;
svg += `<text x="${W / 2}" y="${H - 15}" text-anchor="middle">${spec.xlabel}</text>`;
svg += `<text transform="translate(18 ${H / 2}) rotate(-90)" text-anchor="middle">${spec.ylabel}</text>`;
spec.series.forEach((s, i) => {
  const c = colors[(s.colorIndex ?? i) % colors.length];
  const dash = s.dash ? ' stroke-dasharray="6 4"' : '';
  if (s.points.length > 1) {
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join('');
    svg += `<path d="${d}" fill="none" stroke="${c}" stroke-width="1.5"${dash}/>`;
  }
  for (const p of s.points.length <= 40 ? s.points : []) {
    svg += s.dash ? `<rect x="${sx(p[0]) - 3.5}" y="${sy(p[1]) - 3.5}" width="7" height="7" fill="${c}"/>`
                  : `<circle cx="${sx(p[0])}" cy="${sy(p[1])}" r="3.5" fill="${c}"/>`;
  }
  svg += `<rect x="${W - R - 380}" y="${T + 8 + i * 18}" width="12" height="12" fill="${c}"/>`;
  svg += `<text x="${W - R - 362}" y="${T + 18 + i * 18}">${s.name}</text>`;
});
svg += '</svg>';

const dir = mkdtempSync(join(tmpdir(), 'edgellm-plot-'));
const html = join(dir, 'chart.html');
writeFileSync(html, `<html><body style="margin:0">${svg}</body></html>`);
execFileSync('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
  `--window-size=${W},${H}`, `--screenshot=${resolve(out)}`, `file://${html}`], { stdio: 'ignore' });
rmSync(dir, { recursive: true, force: true });
console.error(`wrote ${out}`);

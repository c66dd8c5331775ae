#!/usr/bin/env node
// edgellm demo: one page over the Node addon (bindings/node) with a model picker (and the
// model's projector, for images and audio in a turn), the device and memory plan, staged
// first-run progress (download, engine, warm-up), streamed chat, and documents a chat turn can
// be answered from (with the chunks it cites).
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Demo, kMaxChatBody } from './lib/demo.mjs';
import { kMaxDocBytes } from './lib/docs.mjs';
import { HttpError, readJson, sendError, sendJson } from './lib/http.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const defaultStore = path.join(process.env.XDG_DATA_HOME || path.join(os.homedir(), '.local/share'),
                               'edgellm');

const usage = `Usage: node web/server.mjs [OPTIONS]
Serves the edgellm demo page and its JSON/SSE API.

Options:
  --port P         TCP port; 0 picks a free one (default 8080)
  --host H         address to listen on (default 127.0.0.1; 0.0.0.0 for a LAN)
  --models DIR     folder whose .gguf files the picker offers besides edgellm's own model;
                   files whose name contains "mmproj" are offered as projectors instead
                   (default ${path.join(root, 'models')}, which need not exist)
  --store DIR      model store to pull into and list; the demo's conversation is saved
                   there too (default ${defaultStore})
  --manifest URL   manifest URL the page offers to pull (e.g. http://127.0.0.1:8081/manifest.json)
  --threads N      worker threads per model (default: the addon's, physical cores)
  --mmproj FILE    a projector (mmproj GGUF) offered first in the page's Projector picker and
                   picked by default: a model loaded with it takes images (or audio) in a turn
  --image-max-tokens N
                   at most N tokens per image when a projector is loaded (default 64: one
                   512-pixel tile and the overview, 128 tokens for SmolVLM; 0: the projector's
                   own limit, for SmolVLM up to 4 x 4 tiles and the overview, 17 encodes)
  --embedding-model FILE
                   an embedding model (GGUF) for the Documents panel: text files added there
                   are chunked, embedded and kept in STORE/demo-docs/, and a chat turn can be
                   answered from them, with the chunks it cites (default: none, panel off)
  -h, --help       print this help and exit

It prints "edgellm demo on http://HOST:PORT/" once listening.`;

function fail(message, code = 2) {
  console.error(`edgellm-demo: error: ${message}`);
  process.exit(code);
}

function parseCli(argv) {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, options: {
      port: { type: 'string', default: '8080' },
      host: { type: 'string', default: '127.0.0.1' },
      models: { type: 'string' },
      store: { type: 'string', default: defaultStore },
      manifest: { type: 'string', default: '' },
      threads: { type: 'string' },
      mmproj: { type: 'string', default: '' },
      'image-max-tokens': { type: 'string', default: '64' },
      'embedding-model': { type: 'string', default: '' },
      help: { type: 'boolean', short: 'h', default: false },
    } }));
  } catch (err) {
    fail(`${err.message}\n${usage}`);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    fail(`--port ${values.port}: want 0..65535`);
  }
  const threads = values.threads === undefined ? 0 : Number(values.threads);
  if (!Number.isInteger(threads) || threads < 0) {
    fail(`--threads ${values.threads}: want an integer >= 1 (or 0: the addon's default)`);
  }
  const imageMaxTokens = Number(values['image-max-tokens']);
  if (!Number.isInteger(imageMaxTokens) || imageMaxTokens < 0) {
    fail(`--image-max-tokens ${values['image-max-tokens']}: want an integer >= 1 (or 0: the ` +
         'projector\'s own limit)');
  }
  const mmproj = values.mmproj ? path.resolve(values.mmproj) : '';
  if (mmproj && !statSync(mmproj, { throwIfNoEntry: false })?.isFile()) {
    fail(`--mmproj ${values.mmproj}: no such file (want a projector, an mmproj .gguf)`);
  }
  return { port, host: values.host,
           modelsDir: path.resolve(values.models ?? path.join(root, 'models')),
           modelsDirGiven: values.models !== undefined,
           store: path.resolve(values.store), manifest: values.manifest, threads, mmproj,
           imageMaxTokens, embeddingModel: values['embedding-model'] };
}

function loadAddon() {
  const require = createRequire(import.meta.url);
  try {
    return require(path.join(root, 'bindings/node'));
  } catch (err) {
    const hint = err.code === 'ERR_EDGELLM_ADDON_MISSING' ? ''
      : '\nBuild it first (bash scripts/setup.sh builds bindings/node/build/edgellm.node).';
    return fail(`cannot load the edgellm Node addon: ${err.message}${hint}\n` +
                'Then start the demo again.', 1);
  }
}

const kStatic = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/docs.js': ['docs.js', 'text/javascript; charset=utf-8'],
  '/style.css': ['style.css', 'text/css; charset=utf-8'],
};

function serveStatic(res, [file, type]) {
  const body = readFileSync(path.join(here, 'public', file));  // small; read per request for edits
  res.writeHead(200, { 'content-type': type, 'content-length': body.length,
                       'cache-control': 'no-store' });
  res.end(body);
}

function route(demo, addon, cli) {
  return async (req, res) => {
    const url = new URL(req.url, 'http://localhost');
    const key = `${req.method} ${url.pathname}`;
    try {
      const page = req.method === 'GET' && kStatic[url.pathname];
      if (page) return serveStatic(res, page);
      switch (key) {
        case 'GET /api/device':
          return sendJson(res, 200, { device: addon.deviceProfile({ diskPath: cli.store }),
                                      memory: addon.memoryUsage(), version: addon.version,
                                      manifest: cli.manifest });
        case 'GET /api/models': return sendJson(res, 200, await demo.models());
        case 'GET /api/plan':
          return sendJson(res, 200, await demo.plan(url.searchParams.get('path')));
        case 'GET /api/status': return sendJson(res, 200, demo.status());
        case 'GET /api/events': return demo.listen(res);
        case 'POST /api/load': return sendJson(res, 200, await demo.load(await readJson(req)));
        case 'POST /api/chat': return await demo.chat(res, await readJson(req, kMaxChatBody));
        case 'POST /api/cancel': return sendJson(res, 200, demo.cancel());
        case 'GET /api/conversation': return sendJson(res, 200, demo.conversation());
        case 'POST /api/reset': return sendJson(res, 200, await demo.reset());
        case 'GET /api/docs': return sendJson(res, 200, await demo.docs.status());
        case 'POST /api/docs/add':
          return sendJson(res, 200, await demo.docs.add(await readJson(req, 2 * kMaxDocBytes)));
        case 'POST /api/docs/remove':
          return sendJson(res, 200, await demo.docs.remove(await readJson(req)));
        default:
          throw new HttpError(404, `no route ${key}: the page is at /, the API under /api/`);
      }
    } catch (err) {
      if (!(err instanceof HttpError)) console.error(`edgellm-demo: ${key}:`, err);
      sendError(res, err);
    }
  };
}

const cli = parseCli(process.argv.slice(2));
const addon = loadAddon();
mkdirSync(cli.store, { recursive: true });
const demo = new Demo(addon, cli);
const server = http.createServer(route(demo, addon, cli));
server.on('error', (err) => fail(`cannot listen on ${cli.host}:${cli.port}: ${err.message}: ` +
                                 'is the port in use? try another --port', 1));
server.listen(cli.port, cli.host, () => {
  const { port } = server.address();
  const host = cli.host.includes(':') ? `[${cli.host}]` : cli.host;
  console.log(`edgellm demo on http://${host}:${port}/`);
});

async function shutdown(signal) {
  console.error(`edgellm-demo: stopping (${signal})`);
  server.close();
  server.closeAllConnections();
  await demo.close();
  process.exit(0);
}
process.on('SIGINT', () => shutdown('SIGINT'));
process.on('SIGTERM', () => shutdown('SIGTERM'));

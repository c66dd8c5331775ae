// edgellm demo page: plain JS, no build step. Talks to web/server.mjs (JSON + Server-Sent Events).
'use strict';

const $ = (id) => document.getElementById(id);

function fmtBytes(n) {
  if (!(n >= 0)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function fmtEta(s) {
  if (!(s >= 0)) return 'ETA -';
  return s < 60 ? `ETA ${Math.ceil(s)} s` : `ETA ${Math.floor(s / 60)} min ${Math.ceil(s % 60)} s`;
}

const fmtMs = (ms) => (ms == null ? '-' : `${ms.toFixed(ms < 10 ? 2 : 1)} ms`);

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const res = await fetch(path, init);
  if (!res.ok) throw new Error((await res.json().catch(() => null))?.error ?? `HTTP ${res.status}`);
  return res;
}
const getJson = async (path) => (await api(path)).json();

// Reads a text/event-stream response body (EventSource cannot POST), calling onEvent(name, data).
async function readSse(res, onEvent) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = 'message';
      let data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        else if (line.startsWith('data: ')) data += line.slice(6);
      }
      if (data) onEvent(event, JSON.parse(data));
    }
  }
}

function fillTable(id, rows) {
  const body = $(id).tBodies[0];
  body.replaceChildren(...rows.map(([k, v]) => {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    const td = document.createElement('td');
    th.textContent = k;
    td.textContent = v;
    tr.append(th, td);
    return tr;
  }));
}

// Device panel.
async function showDevice() {
  const { device: d, version, manifest } = await getJson('/api/device');
  $('version').textContent = `edgellm ${version.edgellm} · llama.cpp ${version.llama}`;
  if (manifest && !$('manifest-url').value) $('manifest-url').value = manifest;
  const clusters = d.clusters.map((c) => `${c.cpus.length}` +
    (c.maxFreqKhz > 0 ? `×${(c.maxFreqKhz / 1e6).toFixed(2)} GHz` : ' (max frequency unknown)'));
  fillTable('device', [
    ['platform', `${d.platform}${d.socModel ? ` (${d.socModel})` : ''}`],
    ['RAM', `${fmtBytes(d.availableRamBytes)} free of ${fmtBytes(d.totalRamBytes)}`],
    ['CPUs', `${d.nCpus} (${d.bigCores} big)${clusters.length ? ': ' + clusters.join(', ') : ''}`],
    ['hottest zone', d.maxTempC > -100 ? `${d.maxTempC.toFixed(1)} °C` : 'no thermal zones'],
    ['disk free', `${fmtBytes(d.diskFreeBytes)} at ${d.diskPath}`],
  ]);
}

// Model picker, projector picker and memory plan.
let loadedModel = null;  // GET /api/status's model: {path, vision, audio, mmprojPath, ...}

async function showModels(selectPath) {
  const { models, projectors, defaultProjector, errors, notes } = await getJson('/api/models');
  const select = $('model-select');
  const keep = selectPath ?? select.value;
  select.replaceChildren(...models.map((m) => {
    const o = document.createElement('option');
    o.value = m.path;
    o.textContent = `${m.source}: ${m.id} (${fmtBytes(m.sizeBytes)})` +
                    (m.active === false ? ' inactive' : '');
    return o;
  }));
  if (models.some((m) => m.path === keep)) select.value = keep;
  if (!models.length) {
    errors.push('no models yet: put .gguf files in --models or pull one from a manifest URL');
  }
  // Projectors: none, then --mmproj's and the mmproj files of --models. Keeps the pick; else the
  // loaded model's projector; else --mmproj's.
  const proj = $('projector-select');
  const keepProj = proj.dataset.picked === '1' ? proj.value
    : loadedModel ? loadedModel.mmprojPath : defaultProjector;
  const none = document.createElement('option');
  none.value = '';
  none.textContent = 'none';
  proj.replaceChildren(none, ...projectors.map((p) => {
    const o = document.createElement('option');
    o.value = p.path;
    o.textContent = `${p.id} (${fmtBytes(p.sizeBytes)})`;
    return o;
  }));
  proj.value = projectors.some((p) => p.path === keepProj) ? keepProj : '';
  $('models-note').textContent = notes.join('; ');
  $('models-error').textContent = errors.join('; ');
  $('load-btn').disabled = models.length === 0;
  if (select.value) await showPlan(select.value);
}

async function showPlan(path) {
  $('plan-model').textContent = path.split('/').pop();
  try {
    const p = await getJson(`/api/plan?path=${encodeURIComponent(path)}`);
    fillTable('plan', [
      ['weights', fmtBytes(p.weightsBytes)],
      ['KV cache', `${fmtBytes(p.kvBytes)} (ctx ${p.ctx})`],
      ['compute', fmtBytes(p.computeBytes)],
      ['overhead', fmtBytes(p.overheadBytes)],
      ['total', fmtBytes(p.totalBytes)],
      ['budget', `${fmtBytes(p.budgetBytes)} of ${fmtBytes(p.ramBytes)} RAM`],
      ['fits', p.fits ? 'yes' : `no (largest ctx that fits: ${p.maxCtxThatFits})`],
    ]);
    $('plan-advice').textContent = p.advice;
  } catch (err) {
    fillTable('plan', []);
    $('plan-advice').textContent = err.message;
  }
}

// Staged progress: every stage the server reports, as it happens (GET /api/events).
function describeStage(s) {
  if (s.stage === 'download') {
    const rate = s.bytesPerSecond > 0 ? ` · ${fmtBytes(s.bytesPerSecond)}/s` : '';
    return `download ${s.percent.toFixed(0)}% · ${fmtBytes(s.bytesDone)} of ` +
           `${fmtBytes(s.bytesTotal)}${rate} · ${fmtEta(s.etaSeconds)} (${s.step})`;
  }
  if (s.stage === 'initializing engine') return `initializing engine ${s.percent.toFixed(0)}%`;
  if (s.stage === 'ready') return `ready: ${s.model}`;
  if (s.stage === 'error') return `error: ${s.message}`;
  return s.stage;
}

function onStage(s) {
  const text = describeStage(s);
  $('stage').textContent = text;
  $('stage').dataset.stage = s.stage;
  const bar = $('progress-bar');
  if (s.percent !== undefined) bar.value = s.percent;
  else if (s.stage === 'ready') bar.value = 100;
  else bar.removeAttribute('value');  // indeterminate while warming up
  $('progress-detail').textContent = s.path ?? s.url ?? '';
  const log = $('stage-log');
  let item = log.lastElementChild;
  if (!item || item.dataset.stage !== s.stage) {
    item = document.createElement('li');
    item.dataset.stage = s.stage;
    log.append(item);
  }
  item.textContent = text;
}

async function load(body) {
  $('stage-log').replaceChildren();
  $('stage').textContent = 'starting';
  $('stage').dataset.stage = 'starting';
  $('load-error').textContent = '';
  document.body.dataset.load = 'running';
  for (const id of ['load-btn', 'pull-btn', 'send-btn', 'attach-btn']) $(id).disabled = true;
  try {
    const { info } = await (await api('/api/load',
                                      { ...body, mmprojPath: $('projector-select').value })).json();
    loadedModel = { path: info.path, vision: info.vision, audio: info.audio,
                    mmprojPath: info.mmprojPath ?? '' };
    await showModels(info.path);
    await showPlan(info.path);
    await showConversation();
    $('send-btn').disabled = false;
  } catch (err) {
    $('load-error').textContent = err.message;
  } finally {
    document.body.dataset.load = 'done';
    showAttachState();
    pollStatus();
    $('load-btn').disabled = $('model-select').options.length === 0;
    $('pull-btn').disabled = false;
  }
}

// A reply's media: "image: 128 tokens, encode 5.8 s", or "reused" when nothing was encoded
// (its cells were in the KV cache, or its encoding in the encoded-media cache).
function describeMedia(s) {
  if (!s?.nMedia) return '';
  const kind = s.mediaKind ?? 'media';
  const plural = { image: 'images', audio: 'audio clips', media: 'media items' }[kind] ?? kind;
  const what = s.nMedia === 1 ? kind : `${s.nMedia} ${plural}`;
  return `${what}: ${s.nMediaTokens} tokens, ` +
         (s.mediaEncodeMs > 0 ? `encode ${(s.mediaEncodeMs / 1000).toFixed(1)} s` : 'reused');
}

// The conversation: its messages, each reply with the stats of the turn that made it, each
// user turn with how many media it carries (their bytes stay on the server).
function addMessage(role, text, stats, mediaCount) {
  const li = document.createElement('li');
  li.dataset.role = role;
  li.textContent = window.docsPanel.displayText(role, text);
  if (mediaCount) {
    const tag = document.createElement('span');
    tag.className = 'media-tag';
    tag.textContent = typeof mediaCount === 'string' ? mediaCount
      : `${mediaCount} attachment${mediaCount === 1 ? '' : 's'}`;
    li.append(tag);
  }
  if (stats) {
    const s = document.createElement('span');
    s.className = 'turn-stats';
    const media = describeMedia(stats);
    s.textContent = `TTFT ${fmtMs(stats.ttftMs)} · reused ${stats.nCached} of ` +
                    `${stats.nCached + stats.nPrompt} prompt tokens` +
                    (media ? ` · ${media}` : '') +
                    (stats.turnsDropped ? ` · dropped ${stats.turnsDropped} old turns` : '');
    li.append(s);
  }
  $('history').append(li);
  li.scrollIntoView({ block: 'nearest' });
}

// `replyStats[k]`: the stats of the k-th assistant message (null when not known).
function showHistory(history, replyStats = []) {
  $('history').replaceChildren();
  let k = 0;
  for (const m of history) {
    addMessage(m.role, m.content ?? '', m.role === 'assistant' ? replyStats[k++] : null,
               m.mediaCount);
  }
}

async function showConversation() {
  const { history, replyStats, restored } = await getJson('/api/conversation');
  showHistory(history, replyStats);
  $('restored').textContent = restored
    ? (restored.kvRestored ? `resumed, KV cache restored (${restored.nTokens} tokens)`
                           : `resumed: ${restored.whyNot}`)
    : '';
}

// The attachment: one image or audio clip for the next turn, shown by name until it is sent.
let attachment = null;  // {name, type, size, data (base64)}
const kMaxAttachBytes = 16 * 1024 * 1024;  // the server's limit (web/lib/demo.mjs)

function showAttachment() {
  $('attachment').hidden = !attachment;
  $('attach-name').textContent = attachment
    ? `${attachment.name} (${fmtBytes(attachment.size)})` : '';
}

function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error(`cannot read ${file.name}`));
    reader.readAsDataURL(file);
  });
}

async function attachFile() {
  const file = $('attach-file').files[0];
  $('attach-file').value = '';  // the same file can be picked again
  if (!file) return;
  $('chat-error').textContent = '';
  if (file.size > kMaxAttachBytes) {
    $('chat-error').textContent = `${file.name} is above ${kMaxAttachBytes >> 20} MiB`;
    return;
  }
  try {
    attachment = { name: file.name, type: file.type, size: file.size,
                   data: await readBase64(file) };
  } catch (err) {
    $('chat-error').textContent = err.message;
  }
  showAttachment();
}

// Attach needs a model loaded with a projector; the button says why when it is off.
function showAttachState() {
  const m = loadedModel;
  const takes = m ? [m.vision && 'images', m.audio && 'audio'].filter(Boolean) : [];
  const btn = $('attach-btn');
  btn.disabled = takes.length === 0 || document.body.dataset.chat === 'running' ||
                 document.body.dataset.load === 'running';
  const why = !m ? 'Load a model first (with a projector picked under Projector) to attach an ' +
                   'image or an audio clip'
    : takes.length === 0 ? `${m.path.split('/').pop()} was loaded without a projector: pick one ` +
                           'under Projector and press Load to attach images or audio'
    : `Attach ${takes.join(' or ')} to the next turn (${m.mmprojPath.split('/').pop()})`;
  btn.title = why;
  $('attach-wrap').title = why;  // a disabled button shows no tooltip in some browsers
  $('attach-file').accept = m?.vision && !m?.audio ? 'image/*'
    : m?.audio && !m?.vision ? 'audio/*' : 'image/*,audio/*';
}

// Chat: POST /api/chat answers with an event stream of text batches, then the stats.
async function send() {
  const answer = $('answer');
  const prompt = $('prompt').value;
  if (prompt.trim() === '') {
    $('chat-error').textContent = attachment ? `type a question to send with ${attachment.name}` : '';
    return;
  }
  const sent = attachment;
  answer.replaceChildren();
  $('chat-error').textContent = '';
  $('live-ms-per-token').textContent = '-';
  for (const id of ['finish', 'ngen', 'ttft', 'ms-per-token', 'decode-tps', 'prefill', 'batches',
                    'delivery', 'peak-rss', 'reused', 'dropped', 'media']) {
    $(`stat-${id}`).textContent = '-';
  }
  document.body.dataset.chat = 'running';
  $('send-btn').disabled = true;
  $('reset-btn').disabled = true;
  $('attach-btn').disabled = true;
  $('cancel-btn').disabled = false;
  // The turn leaves the input: the prompt box and the attachment are cleared at once.
  $('prompt').value = '';
  attachment = null;
  showAttachment();
  addMessage('user', prompt, null, sent ? sent.name : 0);
  window.docsPanel.showSources([]);
  const body = { prompt, maxTokens: Number($('max-tokens').value),
                 docs: window.docsPanel.mode() };
  const temperature = $('temperature').value.trim();
  if (temperature !== '') body.temperature = Number(temperature);
  if ($('ignore-eos').checked) body.ignoreEos = true;
  if (sent) body.media = [{ name: sent.name, type: sent.type, data: sent.data }];
  let accepted = false;
  try {
    const res = await api('/api/chat', body);
    accepted = true;
    await readSse(res, (event, data) => {
      if (event === 'token') {
        answer.append(data.text);
        if (data.msPerToken != null) {
          $('live-ms-per-token').textContent = data.msPerToken.toFixed(1);
        }
      } else if (event === 'done') {
        showStats(data);
        window.docsPanel.showSources(data.sources);
        // The server's history is the truth (it may have dropped old turns).
        showHistory(data.history, data.replyStats);
      } else if (event === 'error') {
        $('chat-error').textContent = data.message;
      }
    });
  } catch (err) {
    $('chat-error').textContent = err.message;
  }
  if (!accepted) {
    // Refused (e.g. an unreadable image): the turn was not taken. Give the prompt and the
    // attachment back unless something new was typed or attached meanwhile.
    if ($('prompt').value === '') $('prompt').value = prompt;
    if (!attachment && sent) {
      attachment = sent;
      showAttachment();
    }
  }
  if ($('chat-error').textContent) {
    // The server's history is the truth: the refused or failed turn may not be in it.
    await showConversation().catch(() => {});
  }
  document.body.dataset.chat = 'done';
  $('send-btn').disabled = false;
  $('reset-btn').disabled = false;
  $('cancel-btn').disabled = true;
  showAttachState();
  pollStatus();
}

function showStats({ finishReason, msPerToken, stats: s }) {
  $('stat-finish').textContent = finishReason;
  $('stat-ngen').textContent = `${s.nGen} (prompt ${s.nPrompt})`;
  $('stat-ttft').textContent = fmtMs(s.ttftMs);
  $('stat-ms-per-token').textContent =
    msPerToken == null ? '-' : `${msPerToken.toFixed(1)} ms/token`;
  $('stat-decode-tps').textContent = `${s.decodeTps.toFixed(1)} tok/s`;
  $('stat-prefill').textContent = `${fmtMs(s.prefillMs)} (${s.prefillTps.toFixed(0)} tok/s)`;
  $('stat-batches').textContent = String(s.batches);
  const ms = (us) => (us / 1000).toFixed(2);
  $('stat-delivery').textContent = `${ms(s.deliveryP50Us)} / ${ms(s.deliveryP99Us)} ms`;
  $('stat-peak-rss').textContent = fmtBytes(s.peakRssBytes);
  if (msPerToken != null) $('live-ms-per-token').textContent = msPerToken.toFixed(1);
  $('stat-reused').textContent = `${s.nCached} of ${s.nCached + s.nPrompt} prompt tokens`;
  $('stat-dropped').textContent = s.turnsDropped ? `${s.turnsDropped} turns` : 'none';
  $('stat-media').textContent = describeMedia(s) || 'none';
}

// Live RSS, threads and busy state, polled.
async function pollStatus() {
  try {
    const s = await getJson('/api/status');
    $('live-rss').textContent = fmtBytes(s.rssBytes);
    $('live-peak-rss').textContent = fmtBytes(s.peakRssBytes);
    $('live-threads').textContent = s.threads || '-';
    $('live-busy').textContent = s.loading ? 'loading' : s.busy ? 'busy' : 'idle';
    $('live-model').textContent =
      s.model ? `${s.model.name} (${s.model.quant}, ctx ${s.model.ctx}` +
                (s.model.mmprojPath ? `, ${[s.model.vision && 'vision', s.model.audio && 'audio']
                  .filter(Boolean).join(' + ')}` : '') + ')'
              : 'no model';
    loadedModel = s.model;
    showAttachState();
    if (s.model && !s.loading && document.body.dataset.chat !== 'running') {
      $('send-btn').disabled = false;
      $('reset-btn').disabled = false;
    }
  } catch (err) {
    $('live-busy').textContent = `server unreachable: ${err.message}`;
  }
}

function main() {
  const events = new EventSource('/api/events');
  events.addEventListener('stage', (e) => onStage(JSON.parse(e.data)));
  events.onopen = () => { document.body.dataset.events = 'open'; };
  events.onerror = () => { document.body.dataset.events = 'reconnecting'; };

  $('model-select').addEventListener('change', () => showPlan($('model-select').value));
  $('projector-select').addEventListener('change', () => {
    $('projector-select').dataset.picked = '1';  // the user's pick stays over refreshes
  });
  $('attach-btn').addEventListener('click', () => $('attach-file').click());
  $('attach-file').addEventListener('change', attachFile);
  $('attach-remove').addEventListener('click', () => {
    attachment = null;
    showAttachment();
  });
  // Enter sends; Shift+Enter starts a new line; Enter that ends an IME composition does not send.
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key !== 'Enter' || e.shiftKey || e.isComposing || e.keyCode === 229) return;
    e.preventDefault();
    if (!$('send-btn').disabled) send();
  });
  $('load-btn').addEventListener('click', () => load({ path: $('model-select').value }));
  $('pull-btn').addEventListener('click',
                                () => load({ manifestUrl: $('manifest-url').value.trim() }));
  $('send-btn').addEventListener('click', send);
  $('cancel-btn').addEventListener('click', () => api('/api/cancel', {}).catch(() => {}));
  $('reset-btn').addEventListener('click', async () => {
    try {
      await api('/api/reset', {});
      await showConversation();
    } catch (err) {
      $('chat-error').textContent = err.message;
    }
  });

  // The status first: the projector picker starts at the loaded model's projector.
  pollStatus().then(() => Promise.all([showDevice(), showModels(), showConversation(),
                                       window.docsPanel.init()])).catch((err) => {
    $('models-error').textContent = err.message;
  }).finally(() => { document.body.dataset.ready = '1'; });
  setInterval(pollStatus, 1000);
}

main();

// edgellm demo page: the Documents panel (plain JS, loaded before app.js). Adds text files to
// the server's document index (POST /api/docs/add), lists them, and shows the chunks a grounded
// reply cites with the search that found each: with a random-weights embedding model only the
// lexical (word) matches mean anything, and the panel says so.
'use strict';

window.docsPanel = (() => {
  const $ = (id) => document.getElementById(id);
  const kInstruction = 'Answer the question using the notes below';

  async function call(path, body) {
    const init = body === undefined ? {} : {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
    const res = await fetch(path, init);
    const json = await res.json().catch(() => null);
    if (!res.ok) throw new Error(json?.error ?? `HTTP ${res.status}`);
    return json;
  }

  function show(st) {
    $('docs-use').disabled = !st.enabled || st.sources.length === 0;
    $('doc-add-btn').disabled = !st.enabled;
    $('doc-file').disabled = !st.enabled;
    if (!st.enabled) {
      $('docs-status').textContent = st.reason;
      return;
    }
    $('docs-status').textContent = `${st.model} (${st.dims} dims) · ${st.sources.length} ` +
      `document(s), ${st.chunks} chunks, ${(st.bytesOnDisk / 1024).toFixed(0)} KiB on disk`;
    $('docs-warning').textContent = st.random
      ? 'This embedding model has random weights (a test fixture): vector search ranks chunks ' +
        'at random. Only lexical (word) matches mean anything here; each cited chunk below ' +
        'says which search found it.'
      : '';
    $('doc-list').replaceChildren(...st.sources.map((name) => {
      const li = document.createElement('li');
      li.dataset.source = name;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'small';
      remove.textContent = 'remove';
      remove.addEventListener('click', () => run(() => call('/api/docs/remove', { source: name })));
      li.append(`${name} `, remove);
      return li;
    }));
  }

  async function run(action) {
    $('docs-error').textContent = '';
    document.body.dataset.docs = 'busy';
    try {
      const r = await action();
      show(r.stats ?? r);
    } catch (err) {
      $('docs-error').textContent = err.message;
    } finally {
      document.body.dataset.docs = 'idle';
    }
  }

  async function addFile() {
    const file = $('doc-file').files[0];
    if (!file) {
      $('docs-error').textContent = 'pick a text file first';
      return;
    }
    await run(async () => call('/api/docs/add', { name: file.name, text: await file.text() }));
  }

  // The chunks a reply cites, each with where it came from and which search found it.
  function showSources(sources) {
    $('sources').replaceChildren(...(sources ?? []).map((s, i) => {
      const li = document.createElement('li');
      li.dataset.foundBy = s.foundBy;
      const ranks = [s.lexicalRank ? `lexical #${s.lexicalRank}` : '',
                     s.vectorRank ? `vector #${s.vectorRank}` : ''].filter(Boolean).join(', ');
      const head = document.createElement('span');
      head.className = 'source-head';
      head.textContent = `[${i + 1}] ${s.source} · bytes ${s.start}-${s.end} · found by ` +
                         `${s.foundBy} (${ranks})`;
      li.append(head, document.createElement('br'), s.text);
      return li;
    }));
  }

  // A grounded user turn carries the instruction and the chunks: show the question.
  function displayText(role, content) {
    if (role !== 'user' || !content.startsWith(kInstruction)) return content;
    const q = content.lastIndexOf('\nQuestion: ');
    const n = (content.match(/^\[\d+\] /gm) ?? []).length;
    return q < 0 ? content : `${content.slice(q + 11)}  (with ${n} cited chunks)`;
  }

  // The `docs` field of a chat request: the search mode, or false.
  const mode = () => ($('docs-use').checked ? $('docs-mode').value : false);

  function init() {
    $('doc-add-btn').addEventListener('click', addFile);
    return run(() => call('/api/docs'));
  }

  return { init, showSources, displayText, mode };
})();

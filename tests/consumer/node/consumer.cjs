'use strict';
// Runs in an empty npm project that installed edgellm's packed tarball (scripts/consumer.sh):
// require('edgellm') resolves to node_modules/edgellm and its prebuilt addon. Generates a greedy
// chat answer and holds a two-turn conversation on MODEL, embeds two texts with EMBEDDER and
// finds one of them in an index in DIR, then prints one JSON line.
//   node consumer.cjs MODEL PROMPT EMBEDDER DIR
const { Model, version, loadEmbedder, openIndex, cosineSimilarity } = require('edgellm');

(async () => {
  const [file, prompt, embedderFile, dir] = process.argv.slice(2);
  const model = await Model.load(file, { threads: 2 });
  let streamed = '';
  const r = await model.generate(prompt, {
    chat: true, temperature: 0, maxTokens: 64, onToken: (t) => { streamed += t; },
  });
  const conv = await model.conversation();
  const turn1 = await conv.send(prompt, { temperature: 0, maxTokens: 64 });
  const turn2 = await conv.send('Say it in English.', { temperature: 0, maxTokens: 64 });
  await model.dispose();
  const embedder = await loadEmbedder(embedderFile, { threads: 2 });
  const [a, b] = await embedder.embed(['端侧大模型', 'on-device models']);
  const index = await openIndex(dir, embedder);
  await index.addText('notes.txt', 'The ledger is in the lighthouse. 账本在灯塔里。');
  const found = await index.search('账本', { mode: 'lexical' });
  await index.close();
  await embedder.dispose();
  console.log(JSON.stringify({
    version, package: require.resolve('edgellm'), generate: r.text, streamed, turn1: turn1.text,
    turn2: turn2.text, turn2Reused: turn2.stats.nCached, dims: a.length,
    float32: a instanceof Float32Array, cosine: cosineSimilarity(a, b),
    found: found.hits.map((h) => h.source).join(','),
  }));
})().catch((e) => {
  console.error(`consumer: ${e.code ?? ''} ${e.message}`);
  process.exit(1);
});

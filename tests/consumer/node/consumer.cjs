'use strict';
// Runs in an empty npm project that installed edgellm's packed tarball (scripts/consumer.sh):
// require('edgellm') resolves to node_modules/edgellm and its prebuilt addon. Generates a greedy
// chat answer and holds a two-turn conversation on MODEL, then prints one JSON line.
//   node consumer.cjs MODEL PROMPT
const { Model, version } = require('edgellm');

(async () => {
  const [file, prompt] = process.argv.slice(2);
  const model = await Model.load(file, { threads: 2 });
  let streamed = '';
  const r = await model.generate(prompt, {
    chat: true, temperature: 0, maxTokens: 64, onToken: (t) => { streamed += t; },
  });
  const conv = await model.conversation();
  const turn1 = await conv.send(prompt, { temperature: 0, maxTokens: 64 });
  const turn2 = await conv.send('Say it in English.', { temperature: 0, maxTokens: 64 });
  await model.dispose();
  console.log(JSON.stringify({
    version, package: require.resolve('edgellm'), generate: r.text, streamed, turn1: turn1.text,
    turn2: turn2.text, turn2Reused: turn2.stats.nCached,
  }));
})().catch((e) => {
  console.error(`consumer: ${e.code ?? ''} ${e.message}`);
  process.exit(1);
});

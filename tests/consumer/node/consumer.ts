// Type-checked (tsc --strict --noEmit) in the npm project that installed edgellm's tarball
// (scripts/consumer.sh): the package's index.d.ts is what an app compiles against. Never run.
import { Model, version, loadEmbedder, openIndex, type GenerateResult, type SearchHit } from 'edgellm';

async function main(file: string): Promise<string> {
  const model: Model = await Model.load(file, { threads: 2 });
  const r: GenerateResult = await model.generate('你好', {
    chat: true, temperature: 0, maxTokens: 64, onToken: (t: string) => { void t; },
  });
  const conv = await model.conversation();
  const turn = await conv.send('Say it in English.', { maxTokens: 32 });
  const json = await model.generate<{ city: string }>('city: Chengdu', {
    jsonSchema: { type: 'object', properties: { city: { type: 'string' } } },
  });
  const embedder = await loadEmbedder('minilm.gguf', { threads: 2 });
  const vectors: Float32Array[] = await embedder.embed(['a', 'b'], { kind: 'query' });
  const index = await openIndex('notes', embedder, { vectorType: 'int8' });
  const hits: SearchHit[] = (await index.search('a', { topK: 3, mode: 'hybrid' })).hits;
  const chat = await model.conversation({ index, retrieval: { topK: 2 } });
  const grounded = await chat.send('what is a?');
  const cited: SearchHit[] = grounded.sources ?? [];
  await index.close();
  await embedder.dispose();
  await model.dispose();
  const commit: string = version.commit;
  return `${r.text} ${turn.stats.nCached} ${json.json?.city ?? ''} ${commit} ${vectors.length} ` +
    `${hits[0]?.foundBy} ${cited.length}`;
}

void main;

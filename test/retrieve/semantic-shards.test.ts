import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import {
  buildVectorIndex,
  buildVectorIndexFromMatrix,
  createVectorMatrix,
  type VectorIndex,
} from '../../src/retrieve/semantic.js';
import { buildVectorIndex as buildReference } from './reference/semantic-v1.js';

/** Any shard size from one row per shard to all rows in one shard. */
const shardBytes = fc.constantFrom(256, 1024, 4096, 2 ** 30);

const cases = fc
  .record({
    n: fc.integer({ min: 0, max: 60 }),
    d: fc.integer({ min: 1, max: 40 }),
    k: fc.integer({ min: 0, max: 65 }),
    maxShardBytes: shardBytes,
  })
  .chain(({ n, d, k, maxShardBytes }) =>
    fc.record({
      k: fc.constant(k),
      maxShardBytes: fc.constant(maxShardBytes),
      // small integers: many exact ties (equal and parallel vectors), so ties straddle shard borders and the k cut
      vectors: fc.array(fc.array(fc.integer({ min: -2, max: 2 }), { minLength: d, maxLength: d }), { minLength: n, maxLength: n }),
      queries: fc.array(fc.array(fc.integer({ min: -2, max: 2 }), { minLength: d, maxLength: d }), { minLength: 1, maxLength: 4 }),
    }),
  );

// ids in shuffled code point order, so that row order and id order disagree (the tie rule must use ids, not rows)
const name = (i: number): string => `d${((i * 7919) % 1000).toString(36)}-${i}`;

describe('sharded exact search is bit-identical to the single-matrix index of before', () => {
  it('search: same ids, same order, same float32 scores (Object.is), for every shard size and engine', () => {
    fc.assert(
      fc.property(cases, fc.constantFrom('wasm-simd' as const, 'js' as const), ({ k, maxShardBytes, vectors, queries }, engine) => {
        const ids = vectors.map((_, i) => name(i));
        const f32 = vectors.map((x) => Float32Array.from(x));
        const reference = buildReference(ids, f32, { engine: 'js' });
        const index = buildVectorIndex(ids, f32, { engine, matrix: { maxShardBytes } });
        expect(index.engine).toBe(engine);
        for (const q of queries) expect(index.search(Float32Array.from(q), k)).toEqual(reference.search(Float32Array.from(q), k));
      }),
      { numRuns: 300 },
    );
  });

  it('one row per shard: 7 identical vectors tie across every border; k = 4 keeps the 4 largest ids (by hand)', () => {
    const ids = ['c', 'g', 'a', 'e', 'b', 'f', 'd'];
    const index = buildVectorIndex(ids, ids.map(() => Float32Array.from([1, 2, 2])), { matrix: { maxShardBytes: 256 } });
    expect(index.shards).toBe(7);
    // [1,2,2]/3 · [1,2,2]/3 = 9/9 = 1 up to float32 rounding of 1/3 and 2/3; all seven scores are the same float32
    const hits = index.search(Float32Array.from([2, 4, 4]), 4);
    expect(hits.map((h) => h.id)).toEqual(['g', 'f', 'e', 'd']);
    expect(new Set(hits.map((h) => h.score)).size).toBe(1);
    expect(hits[0].score).toBeCloseTo(1, 6);
  });

  it('the shard size in rows follows the byte budget: floor((2^30/4 − 3·(768+16)) / (768+3)) = 348,162 rows for d = 768, within 1 GiB', () => {
    const m = createVectorMatrix(1, 768, { maxWorkers: 2 });
    expect(m.dp).toBe(768);
    expect(m.slots).toBe(3);
    expect(m.rowsPerShard).toBe(Math.floor((2 ** 28 - 3 * 784) / 771));
    expect(m.rowsPerShard).toBe(348162);
    // rows + 3 slots of (query + scores rounded up to 16): 348,162·768 + 3·(768 + 348,176) = 268,435,248 floats
    expect(348162 * 768 + 3 * (768 + 348176)).toBe(268435248);
    expect(268435248 * 4).toBeLessThanOrEqual(2 ** 30);
    const big = createVectorMatrix(348163, 768, { maxWorkers: 2 });
    expect(big.shards.map((s) => s.rows)).toEqual([348162, 1]);
    expect(big.shards[0].floats.length).toBe(268435248);
  });
});

describe('searchBatch on worker threads gives the same hits as search', () => {
  const open: VectorIndex[] = [];
  afterAll(async () => {
    await Promise.all(open.map((i) => i.close()));
  });

  it('2 worker threads over tiny shards, many queries (zero queries and k > n included), equal to the reference', async () => {
    await fc.assert(
      fc.asyncProperty(cases, async ({ k, maxShardBytes, vectors, queries }) => {
        const ids = vectors.map((_, i) => name(i));
        const f32 = vectors.map((x) => Float32Array.from(x));
        const reference = buildReference(ids, f32, { engine: 'js' });
        const index = buildVectorIndex(ids, f32, { matrix: { maxShardBytes, maxWorkers: 2 } });
        open.push(index);
        // repeat the queries so each worker gets several chunks
        const qs = [...queries, ...queries, ...queries, ...queries, ...queries].map((q) => Float32Array.from(q));
        const got = await index.searchBatch(qs, k, { threads: 2 });
        expect(got).toEqual(qs.map((q) => reference.search(q, k)));
        await index.close();
      }),
      { numRuns: 12 },
    );
  });

  it('a matrix filled row by row and searched in place: buildVectorIndexFromMatrix equals buildVectorIndex', async () => {
    const n = 300, d = 20;
    const vectors = Array.from({ length: n }, (_, i) => Float32Array.from({ length: d }, (_, j) => ((i * 31 + j * 17) % 11) - 5));
    const ids = vectors.map((_, i) => name(i));
    const matrix = createVectorMatrix(n, d, { maxShardBytes: 4096, maxWorkers: 2 });
    vectors.forEach((v, i) => matrix.setRow(i, v));
    const index = buildVectorIndexFromMatrix(ids, matrix);
    open.push(index);
    expect(index.shards).toBeGreaterThan(10);
    const qs = vectors.slice(0, 40);
    const reference = buildReference(ids, vectors);
    const batch = await index.searchBatch(qs, 25, { threads: 2 });
    expect(batch).toEqual(qs.map((q) => reference.search(q, 25)));
    expect(qs.map((q) => index.search(q, 25))).toEqual(batch);
    // a second batch reuses the started workers
    expect(await index.searchBatch(qs.slice(0, 3), 5, { threads: 2 })).toEqual(qs.slice(0, 3).map((q) => reference.search(q, 5)));
    await index.close();
  });

  it('checks every query before searching: a wrong length anywhere rejects with EMBEDDING_FAILED', async () => {
    const index = buildVectorIndex(['a', 'b'], [Float32Array.from([1, 0]), Float32Array.from([0, 1])]);
    const e = await index.searchBatch([Float32Array.from([1, 0]), Float32Array.from([1, 0, 0])], 1, { threads: 2 }).catch((x: unknown) => x);
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    const t = await index.searchBatch([Float32Array.from([1, 0])], 1, { threads: 0 }).catch((x: unknown) => x);
    expect(isHarnessError(t, 'CONFIG_INVALID')).toBe(true);
  });

  it('buildVectorIndexFromMatrix: ids and rows must match in number', () => {
    const m = createVectorMatrix(2, 3);
    let e: unknown;
    try {
      buildVectorIndexFromMatrix(['a'], m);
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect((e as Error).message).toBe('1 ids but 2 vectors');
  });
});

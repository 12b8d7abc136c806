/**
 * Issue 25 item 1: the file-backed exact search (vector rows in a file, read one shard at a time into one buffer,
 * every query of a batch per shard) gives the resident index's hits bit for bit, shard borders and ties included.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { embedTextsToFiles, embedTextsToMatrices } from '../../src/embed/embed-texts.js';
import { FakeEmbedder } from '../helpers/fake-embedder.js';
import { buildVectorIndex, buildVectorIndexFromFile, buildVectorIndexFromMatrix, createVectorMatrix } from '../../src/retrieve/semantic.js';
import { createVectorFile, type VectorFile } from '../../src/retrieve/vector-file.js';
import type { Hit } from '../../src/types.js';

let dir: string;
let seq = 0;
const open: VectorFile[] = [];
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'rs-vecfile-'));
});
afterEach(() => {
  for (const f of open.splice(0)) f.remove();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A vector file holding `vectors` (setRow, written in the order given by `order`, default row order). */
function fileOf(vectors: readonly ArrayLike<number>[], d: number, order?: number[]): VectorFile {
  const f = createVectorFile(path.join(dir, `v${seq++}.f32`), vectors.length, d);
  open.push(f);
  for (const i of order ?? vectors.map((_, i) => i)) f.setRow(i, vectors[i]);
  f.flush();
  return f;
}

/** Hits with their float32 score bits, so -0/+0 and every last bit count. */
const bits = (hits: Hit[]) => hits.map((h) => [h.id, new Uint32Array(Float32Array.of(h.score).buffer)[0]]);

// ids in shuffled code point order, so that row order and id order disagree (the tie rule must use ids, not rows)
const name = (i: number): string => `d${((i * 7919) % 1000).toString(36)}-${i}`;

describe('VectorFile holds the matrix rows byte for byte', () => {
  it('setRow writes float32(v_j / ‖v‖) with zero padding; rows written out of order read back the same as the matrix rows', () => {
    const vectors = [[3, 4], [0, 0], [1, 1], [-2, 0], [5, 12]];
    const f = fileOf(vectors, 2, [4, 0, 2, 1, 3]);
    const m = createVectorMatrix(5, 2, { maxWorkers: 0 });
    vectors.forEach((v, i) => m.setRow(i, v));
    expect(f.dp).toBe(16);
    expect(f.byteLength).toBe(5 * 16 * 4);
    const got = new Float32Array(16);
    f.readRow(0, got);
    expect(Array.from(got.subarray(0, 2))).toEqual([Math.fround(3 * (1 / 5)), Math.fround(4 * (1 / 5))]);
    expect(Array.from(got.subarray(2))).toEqual(new Array(14).fill(0));
    f.readRow(4, got);
    expect(Array.from(got.subarray(0, 2))).toEqual([Math.fround(5 * (1 / 13)), Math.fround(12 * (1 / 13))]);
    const all = new Float32Array(5 * 16);
    f.readRows(0, 5, all);
    for (let i = 0; i < 5; i++) expect(Array.from(all.subarray(i * 16, i * 16 + 16))).toEqual(Array.from(m.row(i)));
    // the file on disk is exactly the rows, nothing else
    const onDisk = new Float32Array(new Uint8Array(readFileSync(f.path)).buffer);
    expect(Array.from(onDisk)).toEqual(Array.from(all));
  });

  it('a NaN is refused as the matrix refuses it (EMBEDDING_FAILED naming the vector)', () => {
    const f = fileOf([], 3);
    const g = createVectorFile(path.join(dir, `v${seq++}.f32`), 1, 3);
    open.push(g);
    expect(f.n).toBe(0);
    const e = (() => {
      try {
        g.setRow(0, [1, Number.NaN, 0], 'vector of "x"');
      } catch (x) {
        return x;
      }
    })();
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect((e as Error).message).toBe('vector of "x" has a non-finite value (NaN) at position 1');
  });

  it('remove deletes the file', () => {
    const f = fileOf([[1, 0]], 2);
    expect(existsSync(f.path)).toBe(true);
    f.remove();
    expect(existsSync(f.path)).toBe(false);
  });
});

describe('file-backed search equals the resident index bit for bit', () => {
  it('hand-worked: [1,0], [0,1], [1,1] against query [2,0]: scores 1, 1/√2 (float32), 0', async () => {
    const vectors = [[1, 0], [0, 1], [1, 1]];
    const index = buildVectorIndexFromFile(['a', 'b', 'c'], fileOf(vectors, 2), { shardBytes: 256 });
    // stride 16: one row per 256-byte shard ((256/4 − (16 + 16)) / (16 + 1) = 1.88 → 1)
    expect(index.shards).toBe(3);
    const hits = index.search(Float32Array.from([2, 0]), 3);
    expect(hits.map((h) => h.id)).toEqual(['a', 'c', 'b']);
    expect(hits[0].score).toBe(1);
    const r = Math.fround(1 * (1 / Math.sqrt(2)));
    expect(hits[1].score).toBe(Math.fround(r * 1)); // row c = [r, r], query [1, 0]: r·1 + r·0
    expect(hits[1].score).toBeCloseTo(1 / Math.sqrt(2), 6);
    expect(hits[2].score).toBe(0);
    expect(await index.searchBatch([Float32Array.from([2, 0])], 3)).toEqual([hits]);
  });

  it('one row per shard: 7 identical vectors tie across every border; k = 4 keeps the 4 largest ids (by hand)', async () => {
    const ids = ['c', 'g', 'a', 'e', 'b', 'f', 'd'];
    const vectors = ids.map(() => [1, 2, 2]);
    const index = buildVectorIndexFromFile(ids, fileOf(vectors, 3), { shardBytes: 256 });
    expect(index.shards).toBe(7);
    const hits = index.search(Float32Array.from([2, 4, 4]), 4);
    // all seven scores are the same float32 (≈ 1): the rule keeps the largest ids, g f e d
    expect(hits.map((h) => h.id)).toEqual(['g', 'f', 'e', 'd']);
    expect(new Set(hits.map((h) => h.score)).size).toBe(1);
    expect(hits[0].score).toBeCloseTo(1, 6);
    const resident = buildVectorIndex(ids, vectors.map((v) => Float32Array.from(v)), { matrix: { maxShardBytes: 256 } });
    expect(bits(hits)).toEqual(bits(resident.search(Float32Array.from([2, 4, 4]), 4)));
  });

  it('a tie group straddling a shard border and the k cut: rows 1-4 tie, shard size 2 rows, k = 3', () => {
    // rows: 0 [0,1] (score 0), 1-4 [1,0] (score 1, ids b d a c), 5 [-1,0] (score -1). Query [1,0].
    const ids = ['z', 'b', 'd', 'a', 'c', 'y'];
    const vectors = [[0, 1], [1, 0], [1, 0], [1, 0], [1, 0], [-1, 0]];
    // 2 rows of stride 16 per shard: (S/4 − 32) / 17 ≥ 2 ⇔ S ≥ 264; 300 bytes gives ⌊(75 − 32)/17⌋ = 2
    const index = buildVectorIndexFromFile(ids, fileOf(vectors, 2), { shardBytes: 300 });
    expect(index.shards).toBe(3);
    const hits = index.search(Float32Array.from([1, 0]), 3);
    expect(hits).toEqual([
      { id: 'd', score: 1 },
      { id: 'c', score: 1 },
      { id: 'b', score: 1 },
    ]);
    expect(index.search(Float32Array.from([1, 0]), 6).map((h) => h.id)).toEqual(['d', 'c', 'b', 'a', 'z', 'y']);
  });

  it('searchBatch: every query of the batch in one pass; a zero query gets no hits; k > n gives n hits; k = 0 none', async () => {
    const ids = ['p', 'q', 'r'];
    const index = buildVectorIndexFromFile(ids, fileOf([[1, 0, 0], [0, 1, 0], [0, 0, 1]], 3), { shardBytes: 256 });
    const out = await index.searchBatch([Float32Array.from([0, 0, 5]), Float32Array.from([0, 0, 0]), Float32Array.from([0, 3, 0])], 10);
    expect(out[0].map((h) => [h.id, h.score])).toEqual([['r', 1], ['q', 0], ['p', 0]]);
    expect(out[1]).toEqual([]);
    expect(out[2].map((h) => [h.id, h.score])).toEqual([['q', 1], ['r', 0], ['p', 0]]);
    expect(await index.searchBatch([Float32Array.from([1, 0, 0])], 0)).toEqual([[]]);
    await index.close();
  });

  it('a query of the wrong length fails as the resident index fails (EMBEDDING_FAILED), before any read', async () => {
    const index = buildVectorIndexFromFile(['a'], fileOf([[1, 0]], 2));
    const e = await index.searchBatch([Float32Array.from([1, 0, 0])], 1).catch((x: unknown) => x);
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect((e as Error).message).toBe('query vector has length 3, the index has 2');
  });

  it('property: random small vectors with many ties, any shard size and engine: same hits and score bits as the resident index', async () => {
    const cases = fc
      .record({ n: fc.integer({ min: 0, max: 40 }), d: fc.integer({ min: 1, max: 20 }), k: fc.integer({ min: 0, max: 45 }) })
      .chain(({ n, d, k }) =>
        fc.record({
          k: fc.constant(k),
          d: fc.constant(d),
          shardBytes: fc.constantFrom(256, 700, 4096, 2 ** 20),
          residentShardBytes: fc.constantFrom(256, 2 ** 30),
          engine: fc.constantFrom('wasm-simd' as const, 'js' as const),
          vectors: fc.array(fc.array(fc.integer({ min: -2, max: 2 }), { minLength: d, maxLength: d }), { minLength: n, maxLength: n }),
          queries: fc.array(fc.array(fc.integer({ min: -2, max: 2 }), { minLength: d, maxLength: d }), { minLength: 1, maxLength: 5 }),
        }),
      );
    await fc.assert(
      fc.asyncProperty(cases, async ({ k, d, shardBytes, residentShardBytes, engine, vectors, queries }) => {
        const ids = vectors.map((_, i) => name(i));
        const resident = buildVectorIndex(ids, vectors.map((v) => Float32Array.from(v)), { engine, matrix: { maxShardBytes: residentShardBytes } });
        const file = buildVectorIndexFromFile(ids, fileOf(vectors, d), { engine, shardBytes });
        expect(file.engine).toBe(engine);
        const qs = queries.map((q) => Float32Array.from(q));
        const want = await resident.searchBatch(qs, k, { threads: 1 });
        const got = await file.searchBatch(qs, k);
        expect(got.map(bits)).toEqual(want.map(bits));
        for (let i = 0; i < qs.length; i++) expect(bits(file.search(qs[i], k))).toEqual(bits(want[i]));
        for (const f of open.splice(0)) f.remove();
      }),
      { numRuns: 150 },
    );
  });
});

describe('embedTextsToFiles writes exactly the rows embedTextsToMatrices holds', () => {
  it('several lists with duplicates across them: each file row equals the matrix row, the same stats', async () => {
    const groups = [['a', 'bb', 'a'], [], ['bb', 'ccc', 'a', 'dddd']];
    const m = await embedTextsToMatrices(new FakeEmbedder(), groups, 'document', { batchSize: 2 });
    const names = groups.map((_, g) => path.join(dir, `g${seq++}-${g}.f32`));
    const f = await embedTextsToFiles(new FakeEmbedder(), groups, names, 'document', { batchSize: 2 });
    open.push(...f.files);
    expect(f.stats).toEqual({ ...m.stats, embedSeconds: f.stats.embedSeconds });
    expect(f.files.map((x) => x.n)).toEqual([3, 0, 4]);
    const row = new Float32Array(16);
    groups.forEach((g, gi) =>
      g.forEach((_, i) => {
        f.files[gi].readRow(i, row);
        expect(Array.from(row)).toEqual(Array.from(m.matrices[gi].row(i)));
      }),
    );
    // and the two indexes agree
    const ids = ['i0', 'i1', 'i2', 'i3'];
    const q = Float32Array.from([2, 98, 3]);
    expect(buildVectorIndexFromFile(ids, f.files[2], { shardBytes: 256 }).search(q, 4)).toEqual(buildVectorIndexFromMatrix(ids, m.matrices[2]).search(q, 4));
  });

  it('a failure removes every file it created', async () => {
    const names = [path.join(dir, `h${seq++}.f32`), path.join(dir, `h${seq++}.f32`)];
    const e = await embedTextsToFiles(new FakeEmbedder('bad'), [['ok'], ['bad']], names, 'document').catch((x: unknown) => x);
    expect(isHarnessError(e, 'EMBEDDING_FAILED')).toBe(true);
    expect(names.map((n) => existsSync(n))).toEqual([false, false]);
  });
});

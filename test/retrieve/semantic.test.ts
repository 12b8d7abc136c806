import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { compareByRule } from '../../src/retrieve/rank.js';
import { buildVectorIndex, type VectorEngine } from '../../src/retrieve/semantic.js';

const v = (...xs: number[]): Float32Array => Float32Array.from(xs);
const ids = (hits: { id: string }[]): string[] => hits.map((h) => h.id);
const engines: VectorEngine[] = ['wasm-simd', 'js'];

function caught(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return undefined;
}

describe.each(engines)('exact cosine (%s engine)', (engine) => {
  const index = buildVectorIndex(['a', 'b', 'c', 'z'], [v(1, 0), v(0, 2), v(1, 1), v(0, 0)], { engine });

  it('cosine of normalised vectors: [5,0] scores a = 1, c = 1/sqrt(2) (float32), b = z = 0', () => {
    expect(index.engine).toBe(engine);
    expect(index.dimensions).toBe(2);
    expect(index.size).toBe(4);
    const hits = index.search(v(5, 0), 4);
    expect(ids(hits)).toEqual(['a', 'c', 'z', 'b']); // b and z tie at 0: id descending
    expect(hits[0].score).toBeCloseTo(1, 10);
    expect(hits[1].score).toBeCloseTo(Math.fround(1 / Math.sqrt(2)), 10);
    expect(hits[2].score).toBe(0);
    expect(hits[3].score).toBe(0);
  });

  it('a query of any norm: [3,4] gives a = 3/5, b = 4/5, c = 7/(5 sqrt 2) (float32 arithmetic: 6 decimals)', () => {
    const hits = index.search(v(3, 4), 3);
    expect(ids(hits)).toEqual(['c', 'b', 'a']);
    expect(hits[0].score).toBeCloseTo(7 / (5 * Math.sqrt(2)), 6);
    expect(hits[1].score).toBeCloseTo(4 / 5, 6);
    expect(hits[2].score).toBeCloseTo(3 / 5, 6);
  });

  it('a zero chunk vector stays zero (cosine 0 with every query); a zero query returns no results', () => {
    expect(index.search(v(-1, 7), 4).find((h) => h.id === 'z')!.score).toBe(0);
    // A zero query has cosine 0 with everything: any order would be the tie rule's id order, not retrieval.
    expect(index.search(v(0, 0), 4)).toEqual([]);
  });

  it('ties are broken by id descending, also at the k boundary of the heap', () => {
    const names = ['c', 'f', 'a', 'e', 'b', 'd'];
    const tied = buildVectorIndex([...names, 'worse'], [...names.map(() => v(1, 2, 3)), v(3, 2, 1)], { engine });
    expect(ids(tied.search(v(1, 2, 3), 3))).toEqual(['f', 'e', 'd']);
    expect(ids(tied.search(v(1, 2, 3), 7))).toEqual(['f', 'e', 'd', 'c', 'b', 'a', 'worse']);
  });

  it('k = 0 returns [], k larger than the index returns every item, an empty index returns []', () => {
    expect(index.search(v(1, 0), 0)).toEqual([]);
    expect(index.search(v(1, 0), 100)).toHaveLength(4);
    expect(buildVectorIndex([], [], { engine }).search(v(1, 0), 5)).toEqual([]);
  });
});

describe('building and searching check their inputs', () => {
  it('does not change the vectors it is given (copies, then normalises)', () => {
    const input = v(3, 4);
    buildVectorIndex(['a'], [input]).search(v(1, 1), 1);
    expect(Array.from(input)).toEqual([3, 4]);
  });

  it('throws EMBEDDING_FAILED for mismatched counts, lengths and non-finite values, naming them', () => {
    const e1 = caught(() => buildVectorIndex(['a', 'b'], [v(1, 0)]));
    expect(isHarnessError(e1, 'EMBEDDING_FAILED')).toBe(true);
    expect((e1 as Error).message).toBe('2 ids but 1 vectors');
    const e2 = caught(() => buildVectorIndex(['a', 'b'], [v(1, 0), v(1, 0, 0)]));
    expect(isHarnessError(e2, 'EMBEDDING_FAILED')).toBe(true);
    expect((e2 as Error).message).toContain('"b" has length 3, but the first vector ("a") has 2');
    expect(isHarnessError(caught(() => buildVectorIndex(['a'], [v(1, Number.NaN)])), 'EMBEDDING_FAILED')).toBe(true);
    const index = buildVectorIndex(['a'], [v(1, 0)]);
    const e3 = caught(() => index.search(v(1, 0, 0), 1));
    expect(isHarnessError(e3, 'EMBEDDING_FAILED')).toBe(true);
    expect((e3 as Error).message).toContain('length 3, the index has 2');
    expect(isHarnessError(caught(() => index.search(v(1, 0), -1)), 'CONFIG_INVALID')).toBe(true);
  });

  it('duplicate ids are a bug upstream: plain Error', () => {
    const e = caught(() => buildVectorIndex(['a', 'a'], [v(1), v(2)]));
    expect(e).toBeInstanceOf(Error);
    expect(isHarnessError(e)).toBe(false);
  });
});

describe('properties against a brute-force float64 oracle', () => {
  const cases = fc
    .record({ n: fc.integer({ min: 0, max: 40 }), d: fc.integer({ min: 1, max: 40 }), k: fc.integer({ min: 0, max: 45 }) })
    .chain(({ n, d, k }) =>
      fc.record({
        k: fc.constant(k),
        // small integers make exact ties (equal and parallel vectors) common
        vectors: fc.array(fc.array(fc.integer({ min: -3, max: 3 }), { minLength: d, maxLength: d }), { minLength: n, maxLength: n }),
        query: fc.array(fc.integer({ min: -3, max: 3 }), { minLength: d, maxLength: d }),
      }),
    );

  const cosine = (a: number[], b: number[]): number => {
    const dot = a.reduce((s, x, j) => s + x * b[j], 0);
    const na = Math.sqrt(a.reduce((s, x) => s + x * x, 0));
    const nb = Math.sqrt(b.reduce((s, x) => s + x * x, 0));
    return na === 0 || nb === 0 ? 0 : dot / (na * nb);
  };

  it('the result is a correct top-k: scores match cosines, ordered by the rule, nothing better left out', () => {
    fc.assert(
      fc.property(cases, ({ k, vectors, query }) => {
        const names = vectors.map((_, i) => `id${String(i).padStart(2, '0')}`);
        const index = buildVectorIndex(names, vectors.map((x) => Float32Array.from(x)));
        const hits = index.search(Float32Array.from(query), k);
        const zeroQuery = query.every((x) => Math.fround(x) === 0);
        expect(hits).toHaveLength(zeroQuery ? 0 : Math.min(k, vectors.length));
        if (zeroQuery) return;
        const oracle = new Map(names.map((id, i) => [id, cosine(vectors[i], query)]));
        for (const h of hits) expect(Math.abs(h.score - oracle.get(h.id)!)).toBeLessThan(1e-6);
        for (let i = 1; i < hits.length; i++) expect(compareByRule(hits[i - 1], hits[i])).toBeLessThan(0);
        const kept = new Set(ids(hits));
        const worstKept = Math.min(...hits.map((h) => oracle.get(h.id)!));
        for (const [id, s] of oracle) if (!kept.has(id)) expect(s).toBeLessThanOrEqual(worstKept + 1e-6);
      }),
      { numRuns: 200 },
    );
  });

  it('the wasm-simd and js engines give identical hits and scores', () => {
    fc.assert(
      fc.property(cases, ({ k, vectors, query }) => {
        const names = vectors.map((_, i) => `id${i}`);
        const f32 = vectors.map((x) => Float32Array.from(x));
        const a = buildVectorIndex(names, f32, { engine: 'wasm-simd' }).search(Float32Array.from(query), k);
        const b = buildVectorIndex(names, f32, { engine: 'js' }).search(Float32Array.from(query), k);
        expect(a).toEqual(b);
      }),
      { numRuns: 100 },
    );
  });
});

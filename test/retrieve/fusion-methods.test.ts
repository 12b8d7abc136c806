import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { convexFusion, fuse, fuseTwo, fusionKey, normalizeScores, reciprocalRankFusion, weightedRrf } from '../../src/retrieve/fusion.js';
import { rankByRule } from '../../src/retrieve/rank.js';
import type { Hit } from '../../src/types.js';

const h = (id: string, score: number): Hit => ({ id, score });
const scoreOf = (hits: Hit[], id: string) => hits.find((x) => x.id === id)?.score;
const ids = (hits: Hit[]) => hits.map((x) => x.id);

// Keyword (BM25-like) and semantic (cosine-like) lists used by the hand-worked examples.
const kw = [h('a', 8), h('b', 4), h('c', 2)];
const sem = [h('c', 0.9), h('d', 0.6), h('a', 0.3)];

describe('normalisations, worked by hand', () => {
  it('minmax: (s − min)/(max − min); floor 0', () => {
    const n = normalizeScores(kw, 'minmax');
    expect(n.scores.get('a')).toBeCloseTo((8 - 2) / (8 - 2), 10);
    expect(n.scores.get('b')).toBeCloseTo((4 - 2) / (8 - 2), 10);
    expect(n.scores.get('c')).toBeCloseTo(0, 10);
    expect(n.floor).toBe(0);
  });

  it('zscore: (s − μ)/σ with the population σ; floor = the smallest z', () => {
    const mu = (8 + 4 + 2) / 3;
    const sd = Math.sqrt(((8 - mu) ** 2 + (4 - mu) ** 2 + (2 - mu) ** 2) / 3);
    const n = normalizeScores(kw, 'zscore');
    expect(n.scores.get('a')).toBeCloseTo((8 - mu) / sd, 10);
    expect(n.scores.get('b')).toBeCloseTo((4 - mu) / sd, 10);
    expect(n.floor).toBeCloseTo((2 - mu) / sd, 10);
  });

  it('dbsf: (s − (μ − 3σ)) / 6σ, not clipped; floor 0', () => {
    const mu = (0.9 + 0.6 + 0.3) / 3;
    const sd = Math.sqrt(((0.9 - mu) ** 2 + (0.6 - mu) ** 2 + (0.3 - mu) ** 2) / 3);
    const n = normalizeScores(sem, 'dbsf');
    expect(n.scores.get('c')).toBeCloseTo((0.9 - (mu - 3 * sd)) / (6 * sd), 10);
    expect(n.scores.get('a')).toBeCloseTo((0.3 - (mu - 3 * sd)) / (6 * sd), 10);
    expect(n.floor).toBe(0);
  });

  it('all scores equal: every item 1, floor 0 (no division by zero)', () => {
    for (const m of ['minmax', 'zscore', 'dbsf'] as const) {
      const n = normalizeScores([h('x', 3), h('y', 3)], m);
      expect([n.scores.get('x'), n.scores.get('y'), n.floor]).toEqual([1, 1, 0]);
    }
  });
});

describe('convex fusion, worked by hand', () => {
  it('alpha 0.5, minmax: a missing id takes the list floor 0', () => {
    const fused = convexFusion(kw, sem, { alpha: 0.5, normalize: 'minmax' });
    // sem minmax: c = 1, d = (0.6 − 0.3)/0.6 = 0.5, a = 0; kw minmax: a = 1, b = 1/3, c = 0.
    expect(scoreOf(fused, 'a')).toBeCloseTo(0.5 * 0 + 0.5 * 1, 10);
    expect(scoreOf(fused, 'c')).toBeCloseTo(0.5 * 1 + 0.5 * 0, 10);
    expect(scoreOf(fused, 'd')).toBeCloseTo(0.5 * 0.5 + 0.5 * 0, 10);
    expect(scoreOf(fused, 'b')).toBeCloseTo(0.5 * 0 + 0.5 * (1 / 3), 10);
    // a and c tie at 0.5: id descending puts c first.
    expect(ids(fused)).toEqual(['c', 'a', 'd', 'b']);
  });

  it('alpha 0.25, zscore: missing ids take each list\'s smallest z', () => {
    const fused = convexFusion(kw, sem, { alpha: 0.25, normalize: 'zscore' });
    const zk = normalizeScores(kw, 'zscore');
    const zs = normalizeScores(sem, 'zscore');
    expect(scoreOf(fused, 'b')).toBeCloseTo(0.25 * zs.floor + 0.75 * zk.scores.get('b')!, 10);
    expect(scoreOf(fused, 'd')).toBeCloseTo(0.25 * zs.scores.get('d')! + 0.75 * zk.floor, 10);
  });

  it('alpha 1 ranks exactly as semantic and alpha 0 exactly as keyword (the zero-weight list is not consulted)', () => {
    for (const n of ['minmax', 'zscore', 'dbsf'] as const) {
      expect(ids(convexFusion(kw, sem, { alpha: 1, normalize: n }))).toEqual(ids(rankByRule(sem)));
      expect(ids(convexFusion(kw, sem, { alpha: 0, normalize: n }))).toEqual(ids(rankByRule(kw)));
    }
  });

  it('property: alpha 1 / 0 equal the single list on random lists with ties, at any depth', () => {
    const list = fc.uniqueArray(fc.record({ id: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g'), score: fc.integer({ min: 0, max: 4 }) }), { selector: (x) => x.id });
    fc.assert(
      fc.property(list, list, fc.integer({ min: 1, max: 7 }), fc.constantFrom('minmax', 'zscore', 'dbsf') as fc.Arbitrary<'minmax' | 'zscore' | 'dbsf'>, (k, s, depth, n) => {
        expect(ids(convexFusion(k, s, { alpha: 1, normalize: n, depth }))).toEqual(ids(rankByRule(s, depth)));
        expect(ids(convexFusion(k, s, { alpha: 0, normalize: n, depth }))).toEqual(ids(rankByRule(k, depth)));
      }),
    );
  });

  it('alpha outside [0, 1] is CONFIG_INVALID', () => {
    let e: unknown;
    try {
      convexFusion(kw, sem, { alpha: 1.5, normalize: 'minmax' });
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
  });
});

describe('weighted RRF', () => {
  it('w/(c + r_sem) + (1 − w)/(c + r_kw), worked by hand with w = 0.3, c = 10', () => {
    const fused = weightedRrf(kw, sem, { weight: 0.3, rrfK: 10 });
    // a: kw rank 1, sem rank 3; c: sem rank 1, kw rank 3; d: sem rank 2; b: kw rank 2.
    expect(scoreOf(fused, 'a')).toBeCloseTo(0.7 / 11 + 0.3 / 13, 10);
    expect(scoreOf(fused, 'c')).toBeCloseTo(0.3 / 11 + 0.7 / 13, 10);
    expect(scoreOf(fused, 'd')).toBeCloseTo(0.3 / 12, 10);
    expect(scoreOf(fused, 'b')).toBeCloseTo(0.7 / 12, 10);
    expect(ids(fused)).toEqual(['a', 'c', 'b', 'd']);
  });

  it('weights 0.5 ranks exactly as plain RRF (every score exactly half)', () => {
    const list = fc.uniqueArray(fc.record({ id: fc.string({ minLength: 1, maxLength: 2 }), score: fc.integer({ min: 0, max: 5 }) }), { selector: (x) => x.id, maxLength: 12 });
    fc.assert(
      fc.property(list, list, fc.integer({ min: 0, max: 100 }), (k, s, c) => {
        const w = weightedRrf(k, s, { weight: 0.5, rrfK: c });
        const plain = reciprocalRankFusion([k, s], { rrfK: c });
        expect(ids(w)).toEqual(ids(plain));
        for (const x of w) expect(x.score).toBe(scoreOf(plain, x.id)! / 2);
      }),
    );
  });

  it('weight 1 ranks as semantic, weight 0 as keyword', () => {
    expect(ids(weightedRrf(kw, sem, { weight: 1 }))).toEqual(ids(rankByRule(sem)));
    expect(ids(weightedRrf(kw, sem, { weight: 0 }))).toEqual(ids(rankByRule(kw)));
  });
});

describe('fusion keys and the dispatcher', () => {
  it('keys encode method and parameters', () => {
    expect(fusionKey({ method: 'rrf', k: 60 })).toBe('rrf');
    expect(fusionKey({ method: 'rrf', k: 10 })).toBe('rrf-k10');
    expect(fusionKey({ method: 'rrf', k: 60, weight: 0.3 })).toBe('rrf-k60-w0.3');
    expect(fusionKey({ method: 'convex', alpha: 0.5, normalize: 'minmax' })).toBe('cvx-mm-a0.5');
    expect(fusionKey({ method: 'convex', alpha: 0.25, normalize: 'zscore' })).toBe('cvx-z-a0.25');
    expect(fusionKey({ method: 'convex', alpha: 1, normalize: 'dbsf' })).toBe('cvx-dbsf-a1');
    expect(fusionKey({ method: 'rrf', k: 30 }, 30)).toBe('rrf');
  });

  it('fuseTwo with plain rrf equals reciprocalRankFusion', () => {
    expect(fuseTwo(kw, sem, { method: 'rrf', k: 60 }, 50)).toEqual(reciprocalRankFusion([kw, sem], { rrfK: 60, depth: 50 }));
  });
});

describe('fuse(runs): whole runs, question by question', () => {
  it('rrf over two runs equals RRF of each question\'s lists', () => {
    const a = { q1: { d1: 3, d2: 2 }, q2: { d3: 1 } };
    const b = { q1: { d2: 0.9, d4: 0.5 } };
    const out = fuse([a, b], { method: 'rrf', k: 60 });
    expect(out.q1.d2).toBeCloseTo(1 / 62 + 1 / 61, 10);
    expect(out.q1.d1).toBeCloseTo(1 / 61, 10);
    expect(out.q2.d3).toBeCloseTo(1 / 61, 10);
  });

  it('convex needs exactly two runs', () => {
    let e: unknown;
    try {
      fuse([{ q: { d: 1 } }], { method: 'convex', alpha: 0.5 });
    } catch (x) {
      e = x;
    }
    expect(isHarnessError(e, 'CONFIG_INVALID')).toBe(true);
  });
});

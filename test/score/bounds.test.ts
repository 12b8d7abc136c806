/** Bounds of a measure from the unjudged documents of the top k (src/score/bounds.ts), worked by hand. */
import { describe, expect, it } from 'vitest';
import { isHarnessError } from '../../src/errors.js';
import { unjudgedBounds } from '../../src/score/bounds.js';
import { parseMeasure } from '../../src/score/measures.js';
import { thrown } from '../helpers/errors.js';

const log2 = Math.log2;

describe('unjudgedBounds', () => {
  it('precision@3: the unjudged document of the top 3 counted relevant once (its repeat stays a non-relevant slot)', () => {
    const b = unjudgedBounds(['a', 'u', 'u', 'n'], { a: 1, n: 0 }, parseMeasure('precision@3'), 1);
    expect(b.lower).toBeCloseTo(1 / 3, 10);
    expect(b.upper).toBeCloseTo(2 / 3, 10);
    expect(b.unjudged).toBe(1);
  });

  it('recall@2: the unjudged document joins R too: 1/2 -> (1 + 1) / (2 + 1)', () => {
    const b = unjudgedBounds(['u', 'a'], { a: 1, b: 1 }, parseMeasure('recall@2'), 1);
    expect(b.lower).toBeCloseTo(1 / 2, 10);
    expect(b.upper).toBeCloseTo(2 / 3, 10);
  });

  it('mrr@3: an unjudged document at rank 1 would make it 1/1 instead of 1/3; documents beyond k are not counted', () => {
    const b = unjudgedBounds(['u', 'n', 'a', 'v'], { a: 1, n: 0 }, parseMeasure('mrr@3'), 1);
    expect(b.lower).toBeCloseTo(1 / 3, 10);
    expect(b.upper).toBeCloseTo(1 / 1, 10);
    expect(b.unjudged).toBe(1);
  });

  it('the threshold grade is the gain: ndcg@2 with t = 2 counts the unjudged document as grade 2', () => {
    // [u, a], a: 3. lower = (3/log2 3) / 3; upper: DCG = 2/1 + 3/log2 3, IDCG = 3/1 + 2/log2 3
    const b = unjudgedBounds(['u', 'a'], { a: 3 }, parseMeasure('ndcg@2'), 2);
    expect(b.lower).toBeCloseTo(3 / log2(3) / 3, 10);
    expect(b.upper).toBeCloseTo((2 + 3 / log2(3)) / (3 + 2 / log2(3)), 10);
  });

  it('never below the usual value: ndcg@4 of [a, x, y, u] would fall to (1 + 1/log2 5) / (1 + 1/log2 3), so upper = lower = 1', () => {
    const b = unjudgedBounds(['a', 'x', 'y', 'u'], { a: 1, x: 0, y: 0 }, parseMeasure('ndcg@4'), 1);
    expect((1 + 1 / log2(5)) / (1 + 1 / log2(3))).toBeLessThan(1);
    expect(b.lower).toBe(1);
    expect(b.upper).toBe(1);
  });

  it('nothing unjudged in the top k: upper = lower', () => {
    const b = unjudgedBounds(['n', 'a', 'u'], { a: 1, n: 0 }, parseMeasure('precision@2'), 1);
    expect(b).toEqual({ lower: 1 / 2, upper: 1 / 2, unjudged: 0 });
  });

  it('a measure without a cutoff, judged@k or a condensed measure is refused with MEASURE_UNKNOWN', () => {
    for (const m of ['r_precision', 'judged@5', 'ndcg_condensed@5', 'bpref']) {
      expect(isHarnessError(thrown(() => unjudgedBounds(['a'], { a: 1 }, parseMeasure(m), 1)), 'MEASURE_UNKNOWN'), m).toBe(true);
    }
  });
});
